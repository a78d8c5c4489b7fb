#!/usr/bin/env python3
"""Regenerates the whole-model fixtures of tests/onnx/models (issue 12).

Tiny random-weight configurations of the models people export, from both PyTorch ONNX
exporters, with ONNX Runtime's outputs at several shapes:

    HuggingFace BERT, RoBERTa, DistilBERT, GPT-2   (2 layers, hidden 32, 2 heads)
    HuggingFace LLaMA (2 layers, hidden 32, grouped-query attention, rotary embeddings
    computed in the graph: Sin, Cos)
    torchvision-style ResNet-50 (its Bottleneck blocks, small widths), MobileNetV2 (one
    block per stage) and MobileNetV3-small (width 0.25, 10 classes)
    HuggingFace Whisper's encoder (two 1-D convolutions and GELU, then 2 layers) on 8 mel
    bins x 40 frames, and wav2vec 2.0 (a 1-D convolutional front end with GroupNorm, a
    grouped convolutional position embedding, 2 layers) on raw audio of any length
    a CRNN-style sequence model (a 1-D convolution, a 2-layer bidirectional LSTM, a GRU and
    a per-frame classifier) on 8 features x any number of frames

each exported by the TorchScript exporter (opset 17, `dynamo=False`) and by torch.export
(`dynamo=True`, weights as external data where it writes them: opset 18 for the models of
issue 12, the exporter's own default, 20, for LLaMA, Whisper, wav2vec 2.0 and the CRNN; torch.export
cannot take wav2vec 2.0's model).

For every model, under <model>_<exporter>/:
    model.onnx [model.onnx.data]
    cases/<case>/<input>.npy ... and <output>.npy   (ONNX Runtime's outputs)
and MANIFEST.txt: one line per case, "<model dir> <case> <inputs> -> <outputs>".

The cases: text models at (batch, sequence) = (1, 1), (1, 7), (2, 7) with the second row
padded after 4 tokens, and (1, 40); image models at batch 1 and 2, 64x64; Whisper at batch 1
and 2; wav2vec 2.0 at (batch, samples) = (1, 800), (1, 1203), (2, 800); the CRNN at (batch,
frames) = (1, 7), (2, 12), (1, 1). Inputs are
seeded, so a rerun writes the same inputs (the weights are seeded too, but exporters
change between torch versions: regenerate everything together).

Needs torch, torchvision, transformers, onnx and onnxruntime from PyPI (CI does not: it
reads the committed files). Usage: make_models.py [OUT_DIR] [--only NAME ...] (--only
regenerates those models and keeps the other models' lines of MANIFEST.txt).
"""

import argparse
import os
import shutil
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 100


def text_models():
    import transformers as T

    def bert_like(model_cls, config_cls, **kw):
        cfg = config_cls(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64, **kw)
        return model_cls(cfg)

    yield "bert", lambda: bert_like(T.BertModel, T.BertConfig)
    yield "roberta", lambda: bert_like(T.RobertaModel, T.RobertaConfig, pad_token_id=1)
    yield "distilbert", lambda: T.DistilBertModel(
        T.DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64))
    yield "gpt2", lambda: T.GPT2Model(T.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64))
    yield "llama", lambda: T.LlamaModel(
        T.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, pad_token_id=1))


def audio_models():
    import transformers as T

    yield "whisper_enc", lambda: T.WhisperModel(
        T.WhisperConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
                        max_source_positions=20, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                        decoder_start_token_id=1)).encoder


def wave_models():
    import transformers as T

    yield "wav2vec2", lambda: T.Wav2Vec2Model(
        T.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))


class TinyCRNN(torch.nn.Module):
    """A CRNN-style sequence model (OCR, speech): a 1-D convolution, a 2-layer bidirectional
    LSTM and a GRU over the frames (batch first), and a per-frame classifier."""

    def __init__(self, features=8, hidden=12, classes=5):
        super().__init__()
        self.conv = torch.nn.Conv1d(features, 16, 3, padding=1)
        self.lstm = torch.nn.LSTM(16, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = torch.nn.GRU(2 * hidden, hidden, batch_first=True)
        self.fc = torch.nn.Linear(hidden, classes)

    def forward(self, x):  # [batch, features, frames]
        h = torch.relu(self.conv(x)).transpose(1, 2)
        h, _ = self.lstm(h)
        h, _ = self.gru(h)
        return self.fc(h)


def sequence_models():
    yield "crnn", TinyCRNN


class TinyResNet50(torch.nn.Module):
    """ResNet-50's structure (torchvision's stem, Bottleneck blocks with projection
    shortcuts, global pooling, classifier) at small widths, so that its export is the
    operators and forms of a real ResNet-50 export in a few hundred kilobytes."""

    def __init__(self, widths=(8, 16, 32, 64), blocks=(2, 1, 1, 1), classes=10):
        super().__init__()
        from torchvision.models.resnet import Bottleneck, conv1x1

        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
                                        torch.nn.BatchNorm2d(widths[0]), torch.nn.ReLU(inplace=True),
                                        torch.nn.MaxPool2d(3, 2, 1))
        layers, inplanes = [], widths[0]
        for i, (planes, count) in enumerate(zip(widths, blocks)):
            stride = 1 if i == 0 else 2
            for b in range(count):
                s = stride if b == 0 else 1
                down = None
                if s != 1 or inplanes != planes * Bottleneck.expansion:
                    down = torch.nn.Sequential(conv1x1(inplanes, planes * Bottleneck.expansion, s),
                                               torch.nn.BatchNorm2d(planes * Bottleneck.expansion))
                layers.append(Bottleneck(inplanes, planes, s, down))
                inplanes = planes * Bottleneck.expansion
        self.layers = torch.nn.Sequential(*layers)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(inplanes, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def image_models():
    def vision():
        import torchvision.models as V  # only when an image model is made (--only may skip them)

        return V

    yield "resnet50", lambda: TinyResNet50()
    # One inverted residual block per stage (torchvision's has 1, 2, 3, 4, 3, 3, 1): the
    # same operators and forms (expansion, depthwise, ReLU6 as Clip, residual Adds).
    short = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2], [6, 64, 1, 2], [6, 96, 1, 1], [6, 160, 1, 2], [6, 320, 1, 1]]
    yield "mobilenet_v2", lambda: vision().mobilenet_v2(width_mult=0.25, num_classes=10, inverted_residual_setting=short)
    yield "mobilenet_v3", lambda: vision().mobilenet_v3_small(width_mult=0.25, num_classes=10)


class TextWrap(torch.nn.Module):
    """(input_ids, attention_mask) -> last_hidden_state, as people export these models."""

    def __init__(self, inner, gpt2):
        super().__init__()
        self.inner, self.gpt2 = inner, gpt2

    def forward(self, input_ids, attention_mask):
        kw = {"use_cache": False} if self.gpt2 else {}
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state


class HiddenWrap(torch.nn.Module):
    """x -> last_hidden_state (Whisper's encoder, wav2vec 2.0)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).last_hidden_state


def randomize_norms(model, gen):
    """Seeded non-trivial BatchNorm statistics (fresh ones are 0 / 1, which would hide
    mistakes in folding them)."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


def text_cases(rng):
    cases = {}
    for name, b, t, pad in (("b1_t1", 1, 1, None), ("b1_t7", 1, 7, None), ("b2_t7_padded", 2, 7, 4),
                            ("b1_t40", 1, 40, None)):
        ids = rng.integers(2, VOCAB, size=(b, t), dtype=np.int64)
        mask = np.ones((b, t), dtype=np.int64)
        if pad is not None:
            mask[1, pad:] = 0
            ids[1, pad:] = 1  # the pad token
        cases[name] = {"input_ids": ids, "attention_mask": mask}
    return cases


def image_cases(rng):
    return {f"b{b}_64x64": {"x": rng.standard_normal((b, 3, 64, 64)).astype(np.float32)} for b in (1, 2)}


def audio_cases(rng):
    return {f"b{b}": {"x": rng.standard_normal((b, 8, 40)).astype(np.float32)} for b in (1, 2)}


def wave_cases(rng):
    return {f"b{b}_s{s}": {"x": rng.standard_normal((b, s)).astype(np.float32)} for b, s in ((1, 800), (1, 1203), (2, 800))}


def sequence_cases(rng):
    return {f"b{b}_t{t}": {"x": rng.standard_normal((b, 8, t)).astype(np.float32)} for b, t in ((1, 7), (2, 12), (1, 1))}


CASES = {"text": text_cases, "image": image_cases, "audio": audio_cases, "wave": wave_cases, "sequence": sequence_cases}


def export(model, kind, path, dynamo, opset):
    if kind == "text":
        args = (torch.randint(2, VOCAB, (2, 7)), torch.ones(2, 7, dtype=torch.long))
        names = ["input_ids", "attention_mask"]
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
    elif kind == "audio":
        args = (torch.randn(2, 8, 40),)
        names = ["x"]
        axes = {"x": {0: "batch"}}
    elif kind == "wave":
        args = (torch.randn(2, 800),)
        names = ["x"]
        axes = {"x": {0: "batch", 1: "samples"}}
    elif kind == "sequence":
        args = (torch.randn(2, 8, 12),)
        names = ["x"]
        axes = {"x": {0: "batch", 2: "frames"}}
    else:
        args = (torch.randn(2, 3, 64, 64),)
        names = ["x"]
        axes = {"x": {0: "batch"}}
    if dynamo:
        limit = {"samples": 4096, "frames": 256}
        shapes = {n: {d: torch.export.Dim(v, min=1, max=limit.get(v, 64)) for d, v in a.items()} for n, a in axes.items()}
        kw = {"opset_version": opset} if opset else {}
        torch.onnx.export(model, args, path, input_names=names, output_names=["y"], dynamo=True, dynamic_shapes=shapes,
                          **kw)
    else:
        torch.onnx.export(model, args, path, input_names=names, output_names=["y"], opset_version=17,
                          dynamic_axes={**axes, "y": {0: "batch"}}, dynamo=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default=HERE)
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    torch.manual_seed(0)
    manifest = []
    models = ([(n, m, "text") for n, m in text_models()] + [(n, m, "image") for n, m in image_models()] +
              [(n, m, "audio") for n, m in audio_models()] + [(n, m, "wave") for n, m in wave_models()] +
              [(n, m, "sequence") for n, m in sequence_models()])
    # The models of issue 12 keep opset 18 under torch.export; the later ones take its default.
    pinned = {"bert", "roberta", "distilbert", "gpt2", "resnet50", "mobilenet_v2", "mobilenet_v3"}
    for name, make, kind in models:
        if args.only and name not in args.only:
            continue
        for exporter, dynamo in (("ts", False), ("dynamo", True)):
            gen = torch.Generator().manual_seed(1)
            torch.manual_seed(1)
            inner = make().eval()
            if kind == "image":
                randomize_norms(inner, gen)
            if kind == "text":
                model = TextWrap(inner, name == "gpt2").eval()
            elif kind in ("audio", "wave"):
                model = HiddenWrap(inner).eval()
            else:
                model = inner
            where = os.path.join(args.out, f"{name}_{exporter}")
            shutil.rmtree(where, ignore_errors=True)
            os.makedirs(where)
            path = os.path.join(where, "model.onnx")
            try:
                export(model, kind, path, dynamo, 18 if name in pinned else None)
            except Exception as e:  # an exporter that cannot take the model: say so, go on
                print(f"{name} {exporter}: export failed: {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
                shutil.rmtree(where, ignore_errors=True)
                continue
            onnx.checker.check_model(path)
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            outputs = [o.name for o in session.get_outputs()]
            rng = np.random.default_rng(7)
            cases = CASES[kind](rng)
            for case, feeds in cases.items():
                got = session.run(None, feeds)
                cdir = os.path.join(where, "cases", case)
                os.makedirs(cdir)
                for k, v in feeds.items():
                    np.save(os.path.join(cdir, k + ".npy"), v)
                for k, v in zip(outputs, got):
                    np.save(os.path.join(cdir, k + ".npy"), v)
                manifest.append(f"{name}_{exporter} {case} {','.join(feeds)} -> {','.join(outputs)}")
            size = sum(os.path.getsize(os.path.join(where, f)) for f in os.listdir(where) if f.startswith("model"))
            ops = sorted({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
            print(f"{name} {exporter}: {size / 1024:.0f} KiB, {len(cases)} cases, ops: {' '.join(ops)}")
    path = os.path.join(args.out, "MANIFEST.txt")
    if args.only and os.path.exists(path):  # the other models' lines stay
        with open(path) as f:
            kept = [line.rstrip("\n") for line in f if not line.startswith("#") and line.strip()]
        redone = {f"{n}_{e}" for n in args.only for e in ("ts", "dynamo")}
        manifest = [line for line in kept if line.split()[0] not in redone] + manifest
    with open(path, "w") as f:
        f.write("# <model dir> <case> <inputs> -> <outputs>; written by make_models.py\n")
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
