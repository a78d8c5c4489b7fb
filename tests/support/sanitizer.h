#pragma once
// Which sanitizer this test binary runs under, for the few tests whose subject the sanitizer
// changes (RSS, thread limits, request counts). GCC defines __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__; clang 14 only answers __has_feature.

#if defined(__SANITIZE_ADDRESS__)
#define FUSOR_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUSOR_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define FUSOR_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FUSOR_TEST_TSAN 1
#endif
#endif

namespace fusor::test {

#if defined(FUSOR_TEST_ASAN)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#if defined(FUSOR_TEST_TSAN)
inline constexpr bool kTsan = true;
#else
inline constexpr bool kTsan = false;
#endif
inline constexpr bool kSanitized = kAsan || kTsan;

}  // namespace fusor::test
