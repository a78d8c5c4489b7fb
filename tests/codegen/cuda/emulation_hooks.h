// What the test harness passes to an emulated kernel (host_emulation.h): fusor's own dtype
// conversions (ir/dtype.h), so that the generated sources do not compile them each time.
#pragma once

namespace fusor_emu {

struct Hooks {
  float (*f16_to_f32)(unsigned short);
  unsigned short (*f32_to_f16)(float);
  float (*bf16_to_f32)(unsigned short);
};

}  // namespace fusor_emu
