"""Export the digits demo's CNN to ONNX and run it in onnxruntime.

Loads the checkpoint that ``examples/train_digits_cnn.py`` writes (``runs/digits/
checkpoint.safetensors`` by default, saved with ``ember.tensor.save``), exports the model with
``ember.onnx.export`` with a dynamic batch axis, validates the file with
``onnx.checker.check_model``, runs it in onnxruntime on the demo's validation digits (a batch
size other than the traced one) and prints the accuracy and the largest absolute difference from
ember's own outputs. Then it imports the file back with ``ember.onnx.load_model``, compares the
imported model's outputs with ember's, and takes one fine-tuning step on both from the same
cross-entropy loss: the imported model's parameters are the checkpoint's state_dict entries, and
their gradients must be the original's. Exits 1 when outputs or gradients differ by more than
``--atol`` (1e-5).

When the checkpoint is absent, the script says so and trains the demo's CNN (the same
``DigitsCNN`` class and data split, imported from ``train_digits_cnn.py``) for ``--epochs``
quick epochs itself; nothing is written but the ONNX file.

    python examples/train_digits_cnn.py && python examples/export_onnx.py
    python examples/export_onnx.py --checkpoint /tmp/digits/checkpoint.safetensors --out m.onnx

Needs ``onnx`` and ``onnxruntime`` (``pip install ./packages/onnx onnxruntime``) and the demo's
scikit-learn (``requirements-demo.txt``) for the digits.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

import ember.nn as nn
import ember.onnx
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad
from ember.data import DataLoader

HERE = Path(__file__).resolve().parent


def load_demo():
    """The digits demo as a module (``examples/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("train_digits_cnn", HERE / "train_digits_cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Export the digits demo's CNN to ONNX and check it in onnxruntime.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--checkpoint", default="runs/digits/checkpoint.safetensors",
                        help="checkpoint written by examples/train_digits_cnn.py")
    parser.add_argument("--out", default="runs/digits/digits_cnn.onnx",
                        help="where to write the ONNX file")
    parser.add_argument("--epochs", type=int, default=1,
                        help="quick training epochs when the checkpoint is absent")
    parser.add_argument("--opset", type=int, default=None,
                        help="ONNX opset (default: ember.onnx's default)")
    parser.add_argument("--atol", type=float, default=1e-5,
                        help="largest allowed |onnxruntime - ember| difference")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and of training")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    return args


def quick_train(demo, train_set, epochs: int, seed: int):
    model = demo.DigitsCNN()
    optimizer = optim.Adam(model.parameters(), lr=2e-3)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(train_set, batch_size=32, shuffle=True,
                        generator=et.Generator().manual_seed(seed))
    model.train()
    for epoch in range(1, epochs + 1):
        total, seen = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * y.shape[0]
            seen += y.shape[0]
        print(f"epoch {epoch}/{epochs}  train loss {total / seen:.4f}", flush=True)
    return model


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = [name for mod, name in [("onnx", "onnx"), ("onnxruntime", "onnxruntime"),
                                      ("sklearn", "scikit-learn")]
               if importlib.util.find_spec(mod) is None]
    if missing:
        print(f"error: this example needs {', '.join(missing)}", file=sys.stderr)
        return 2
    import onnx
    import onnxruntime as ort

    started = time.perf_counter()
    demo = load_demo()
    et.manual_seed(args.seed)
    train_set, val_set = demo.load_digits_split(0.2, args.seed)

    checkpoint = Path(args.checkpoint)
    if checkpoint.is_file():
        state = et.load(checkpoint, map_location="cpu")
        model = demo.DigitsCNN()
        model.load_state_dict(state["model"] if "model" in state else state)
        print(f"loaded {checkpoint} (epoch {state.get('epoch', '?')})")
    else:
        print(f"no checkpoint at {checkpoint}: training the demo's DigitsCNN for "
              f"{args.epochs} quick epoch(s) instead (run examples/train_digits_cnn.py first "
              "to export the fully trained model)")
        model = quick_train(demo, train_set, args.epochs, args.seed)
    model.eval()

    # export with a small example batch; the batch axis is dynamic
    example = val_set[:8][0]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    ember.onnx.export(model, example, str(out), input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=args.opset)
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto)
    ops = sorted({node.op_type for node in proto.graph.node})
    print(f"exported {out} (opset {proto.opset_import[0].version}, {len(proto.graph.node)} "
          f"nodes: {' '.join(ops)}); onnx.checker.check_model passed")

    # every validation digit at once: another batch size than the traced one
    images, labels = val_set[:]
    with no_grad():
        expected = model(images).numpy()
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(["logits"], {"image": images.numpy()})[0]
    diff = float(np.max(np.abs(got - expected)))
    labels = labels.numpy()
    ort_acc = float(np.mean(got.argmax(1) == labels))
    ember_acc = float(np.mean(expected.argmax(1) == labels))
    print(f"onnxruntime on {len(labels)} validation digits: accuracy {100 * ort_acc:.2f}% "
          f"(ember {100 * ember_acc:.2f}%)")
    print(f"max abs difference from ember: {diff:.3g} (tolerance {args.atol:g})")

    # back into ember: the same outputs, and one fine-tuning step with the original's gradients
    imported = ember.onnx.load_model(str(out))
    imported.eval()
    with no_grad():
        back_diff = float(np.max(np.abs(imported(images).numpy() - expected)))
    criterion = nn.CrossEntropyLoss()
    batch, targets = val_set[:32]
    model.zero_grad()  # quick training leaves its last gradients
    criterion(model(batch), targets).backward()
    criterion(imported(batch), targets).backward()
    imported_params = dict(imported.named_parameters())
    grad_diff = max(float(np.max(np.abs(imported_params[name].grad.numpy() - p.grad.numpy())))
                    for name, p in model.named_parameters())
    print(f"imported back with ember.onnx.load_model: max abs difference {back_diff:.3g}; one "
          f"fine-tuning step: largest gradient difference {grad_diff:.3g} over "
          f"{len(imported_params)} parameters")
    print(f"done in {time.perf_counter() - started:.1f} s")
    failed = False
    for what, value in (("onnxruntime and ember", diff),
                        ("the imported model and ember", back_diff),
                        ("the imported model's gradients and ember's", grad_diff)):
        if not value <= args.atol:
            print(f"error: {what} differ by {value:.3g} > {args.atol:g}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
