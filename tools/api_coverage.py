"""How much of PyTorch's public API ember has, namespace by namespace.

Run where PyTorch (2.13) is installed, e.g. in the parity env::

    python tools/api_coverage.py                 # the coverage table
    python tools/api_coverage.py --missing       # ... and the missing names per namespace
    python tools/api_coverage.py --excluded      # every excluded name with its reason
    python tools/api_coverage.py --markdown      # the exclusion rules as a Markdown table
    python tools/api_coverage.py --namespace torch.linalg --missing

A namespace's public names are those its ``__all__`` lists plus those ``dir()`` shows without a
leading underscore that the namespace itself defines, leaving out submodules and what it merely
imports (``typing`` helpers, ``math.inf`` or ``Optimizer`` re-imported by a scheduler
module). From those, :data:`EXCLUDE` takes out the names ember leaves out on purpose; each rule
gives the reason, and the same rules, with their reasons, are listed in
``docs/coming-from-pytorch.md``. A name counts as covered when the
ember counterpart has an attribute of that name.

``--min PCT`` exits with status 1 when a namespace is below ``PCT`` percent.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
import types

# (PyTorch namespace, ember counterpart). "torch.Tensor" is the class, its counterpart too.
NAMESPACES = [
    ("torch", "ember.tensor"),
    ("torch.Tensor", "ember.tensor.Tensor"),
    ("torch.nn", "ember.nn"),
    ("torch.nn.functional", "ember.nn.functional"),
    ("torch.nn.init", "ember.nn.init"),
    ("torch.autograd", "ember.autograd"),
    ("torch.autograd.functional", "ember.autograd.functional"),
    ("torch.autograd.graph", "ember.autograd.graph"),
    ("torch.autograd.forward_ad", "ember.autograd.forward_ad"),
    ("torch.optim", "ember.optim"),
    ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    ("torch.utils.data", "ember.data"),
    ("torch.linalg", "ember.tensor.linalg"),
    ("torch.special", "ember.tensor.special"),
    ("torch.fft", "ember.tensor.fft"),
    ("torch.distributions", "ember.distributions"),
    ("torch.func", "ember.autograd.func"),
]

_QUANT = "quantized tensors: ember has no quantized dtypes or quantization workflow"
_SPARSE = ("compressed sparse layouts (CSR/CSC/BSR/BSC) and the half-precision / hybrid "
           "sparse products: ember's sparse tensors are COO (sparse_coo_tensor)")
_JIT = ("TorchScript / JIT / FX / torch.compile / torch.export internals: ember is eager-only "
        "and traces through its op registry (ember.onnx) instead")
_BACKEND = ("entry points of one vendor library (cuDNN, MIOpen, oneDNN/MKL-DNN, FBGEMM) that "
            "PyTorch dispatches to internally; the public op is what user code calls")
_DEVICE = ("devices other than CPU and CUDA (XLA, IPU, XPU, MPS, MTIA, Vulkan, Meta, MAIA): "
           "ember runs on NumPy (CPU) and CuPy (CUDA) only")
_COPY = ("`*_copy` forms of views generated for functionalization (torch.compile); the view "
         "op itself is there, and `.clone()` gives the copy")
_NATIVE = ("ATen-level entry points behind a torch.nn.functional op (`native_*`, the "
           "SyncBatchNorm statistics kernels); call the functional form")
_NESTED = "nested / jagged tensors: ember tensors are dense and rectangular"
_LAYER = ("torch.func's vmap at the top level: ember's is ember.autograd.func.vmap (the tensor "
          "layer has no autograd, and vmap runs under autobatch)")
_NAMED = "named tensors (a prototype in PyTorch itself)"
_REMOVED = ("removed from PyTorch: calling it raises an error pointing to its torch.linalg "
            "replacement, which ember has")
_DTYPE_SHELL = ("shell dtypes without arithmetic in PyTorch itself (sub-byte ints, bit "
                "containers, float8/float4 scaling formats, uint16/32/64)")
_TYPED_STORAGE = ("legacy typed storages, deprecated since PyTorch 2.0; ember has Storage "
                  "and untyped_storage()")
_DISPATCH = ("dispatcher and `__torch_function__` machinery: ember has one registry and no "
             "subclass dispatch protocol")
_BUILD = "facts about how the PyTorch binary was built (MKL, LAPACK, OpenMP, the C++ ABI)"
_DATAPIPE = ("torchdata DataPipes, deprecated in PyTorch 2.x and moved out of torch.utils.data "
             "(use Dataset / IterableDataset)")
_PROFILE = "the autograd profiler (torch.profiler): ember has none"
_MISC = "internal helpers that PyTorch exports by accident; not documented as public API"
_FUNCTIONAL = ("aten bindings of torch.nn.functional ops that torch.* also exposes (PyTorch "
               "documents them as torch.nn.functional.X): ember has each as "
               "ember.nn.functional.X; the tensor core installs and imports without ember-nn")
_COMPLEX32 = ("complex32 (chalf), half-precision complex: NumPy has no such type and PyTorch's "
              "own CPU kernels barely cover it; ember's complex dtypes are complex64 and "
              "complex128")
_AUTOCAST_LEGACY = ("the legacy per-device autocast switches (`set_autocast_gpu_dtype`, ...) "
                    "and TorchScript autocast nesting; use ember.tensor.autocast(device_type)")

# (namespace, regular expression matched against the whole name, reason)
EXCLUDE: list[tuple[str, str, str]] = [
    # -- torch.*
    ("torch", r"q_.*|quantize.*|quantized_.*|dequantize|int_repr|fake_quantize_.*|"
              r"fused_moving_avg_obs_fake_quant|choose_qparams_optimized|q(u)?int.*|qscheme|"
              r"per_(channel|tensor)_.*|empty_quantized|Q(U)?Int.*Storage", _QUANT),
    ("torch", r"sparse_(csr|csc|bsr|bsc|compressed)(_tensor)?|hsmm|dsmm|saddmm|hspmm|"
              r"resize_as_sparse_|(c?col|crow|row)_indices_copy|indices_copy|values_copy|"
              r"segment_reduce", _SPARSE),
    ("torch", r"(Aggregation|Any|Await|Bool|Class|Complex|Dict|DeviceObj|Enum|Float|Future|"
              r"Int|Interface|List|None|Number|Optional|PyObject|RRef|StreamObj|String|Tensor|"
              r"Tuple|Union|SymInt|SymBool)Type|Type|AliasDb|Argument|ArgumentSpec|Block|"
              r"CallStack|Capsule|Code|CompilationUnit|CompleteArgumentSpec|"
              r"ConcreteModuleType(Builder)?|DeepCopyMemoTable|ErrorReport|ExecutionPlan|"
              r"FileCheck|FunctionSchema|Future|Gradient|Graph|GraphExecutorState|"
              r"InferredType|JITException|LiteScriptModule|Node|Script.*|StaticModule|"
              r"TracingState|Use|Value|IODescriptor|BufferDict|ModuleDict|ParameterDict|"
              r"PyTorchFile(Reader|Writer)|(De)?SerializationStorageContext|"
              r"fork|wait|parse_ir|parse_schema|parse_type_comment|"
              r"merge_type_from_type_comment|import_ir_module(_from_buffer)?|unify_type_list|"
              r"compile|cond|while_loop|sym_.*|Sym(Int|Float|Bool)|"
              r"PRIVATE_OPS|classproperty|OperatorInfo", _JIT),
    ("torch", r"cudnn_.*|miopen_.*|mkldnn_.*|fbgemm_.*", _BACKEND),
    ("torch", r"chalf|complex32", _COMPLEX32),
    ("torch", r"is_vulkan_available|get_autocast_(ipu|xla)_dtype|set_autocast_(ipu|xla)_.*|"
              r"is_autocast_(ipu|xla)_enabled|get_device_module|AcceleratorError|"
              r"Event|Stream|from_file", _DEVICE),
    ("torch", r"(alias|as_strided|detach|diagonal|expand|narrow|permute|select|slice|split|"
              r"split_with_sizes|squeeze|t|transpose|unbind|unfold|unsqueeze|view|"
              r"view_as_real|view_as_complex)_copy", _COPY),
    ("torch", r"native_(batch_norm|channel_shuffle|dropout|group_norm|layer_norm|norm)|"
              r"batch_norm_(backward_elemt|backward_reduce|elemt|gather_stats|"
              r"gather_stats_with_counts|stats|update_stats)|norm_except_dim|"
              r"affine_grid_generator|grid_sampler_(2d|3d)|constant_pad_nd|conv_tbc",
     _NATIVE),
    ("torch", r"jagged|nested_.*", _NESTED),
    ("torch", r"vmap", _LAYER),
    ("torch", r"eig|symeig|lstsq|solve|matrix_rank", _REMOVED),
    ("torch", r"bits.*|int[1-7]|uint[1-7]|uint(16|32|64)|float8_.*|float4_.*", _DTYPE_SHELL),
    ("torch", r"(BFloat16|Bool|Byte|Char|ComplexDouble|ComplexFloat|Double|Float|Half|Int|"
              r"Long|Short)Storage|TypedStorage|StorageBase", _TYPED_STORAGE),
    ("torch", r"DispatchKey(Set)?|ExcludeDispatchKeyGuard|DisableTorchFunction(Subclass)?|"
              r"Tag|overrides|library", _DISPATCH),
    ("torch", r"has_(lapack|mkl|openmp|spectral)|compiled_with_cxx11_abi|USE_GLOBAL_DEPS|"
              r"USE_RTLD_GLOBAL_WITH_LIBTORCH|TYPE_CHECKING", _BUILD),
    ("torch", r"AVG|SUM|LockingLogger|LoggerBase|NoopLogger|ThroughputBenchmark|"
              r"Benchmark(Config|ExecutionStats)|get_file_path|"
              r"prepare_multiprocessing_environment|"
              r"profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|init_num_threads|"
              r"thread_safe_generator|FatalError|hash_tensor", _MISC),
    ("torch", r"adaptive_avg_pool1d|adaptive_max_pool1d|alpha_dropout|avg_pool1d|batch_norm|"
              r"bilinear|binary_cross_entropy_with_logits|celu_?|channel_shuffle|"
              r"cosine_embedding_loss|cosine_similarity|dropout|embedding_bag|"
              r"feature_alpha_dropout|group_norm|hardshrink|hinge_embedding_loss|instance_norm|"
              r"kl_div|layer_norm|margin_ranking_loss|pairwise_distance|pdist|pixel_shuffle|"
              r"pixel_unshuffle|poisson_nll_loss|prelu|rms_norm|rrelu_?|selu_?|threshold_?|"
              r"triplet_margin_loss", _FUNCTIONAL),
    ("torch", r"autocast_(increment|decrement)_nesting|clear_autocast_cache|"
              r"(set|is)_autocast_cache_enabled|(get|set)_autocast_(cpu|gpu)_dtype|"
              r"(set|is)_autocast_cpu_enabled", _AUTOCAST_LEGACY),
    # -- Tensor methods and properties
    ("torch.Tensor", r"q_.*|int_repr|dequantize|qscheme|is_quantized", _QUANT),
    ("torch.Tensor", r"to_sparse_(csr|csc|bsr|bsc)|is_sparse_csr|(c?col|crow|row)_indices|"
                     r"sparse_resize_(and_clear_)?|resize_as_sparse_", _SPARSE),
    ("torch.Tensor", r"to_mkldnn|is_mkldnn", _BACKEND),
    ("torch.Tensor", r"chalf", _COMPLEX32),
    ("torch.Tensor", r"ipu|xpu|mtia|is_(ipu|xpu|mtia|maia|meta|mps|vulkan|xla)", _DEVICE),
    ("torch.Tensor", r"names|refine_names|rename_?|align_as|align_to|has_names|name|"
                     r"unflatten_names", _NAMED),
    ("torch.Tensor", r"is_nested|to_padded_tensor", _NESTED),
    ("torch.Tensor", r"eig|symeig|lstsq|solve|matrix_rank", _REMOVED),
    ("torch.Tensor", r"storage_type|is_shared|share_memory_|pin_memory|is_pinned|"
                     r"record_stream", "shared-memory, pinned-memory and CUDA stream handling "
                     "of PyTorch's caching allocator: ember's arrays are NumPy/CuPy's own"),
    ("torch.Tensor", r"as_subclass|module_load", _DISPATCH),
    ("torch.Tensor", r"reinforce|volatile|apply_|map_|map2_|new|"
                     r"is_distributed|hash_tensor|slice_inverse|nonzero_static",
     "legacy (pre-0.4) or CPU-Python-callback APIs PyTorch keeps for compatibility only, or "
     "compiler helpers; not documented as supported"),
    ("torch.Tensor", r"(alias|as_strided|detach|diagonal|expand|narrow|permute|select|slice|"
                     r"split|split_with_sizes|squeeze|t|transpose|unbind|unfold|unsqueeze|"
                     r"view)_copy", _COPY),
    # -- torch.nn
    ("torch.nn", r"factory_kwargs|Container", _MISC),
    ("torch.nn", r"DataParallel", "single-process multi-GPU replication, which PyTorch itself "
                 "discourages in favour of DistributedDataParallel (ember.distributed)"),
    ("torch.nn", r"LinearCrossEntropy(Loss|Options)", "a prototype in PyTorch 2.13"),
    # -- torch.nn.functional
    ("torch.nn.functional", r"BroadcastingList[123]|DType|boolean_dispatch|assert_int_or_pair|"
                            r"reproducibility_notes|sparse_support_notes|tf32_notes|"
                            r"GRID_SAMPLE_.*|Tensor|TYPE_CHECKING", _MISC),
    ("torch.nn.functional", r"handle_torch_function|has_torch_function.*", _DISPATCH),
    ("torch.nn.functional", r"grouped_mm|scaled_grouped_mm|scaled_mm|ScalingType|SwizzleType",
     "float8 / grouped GEMM kernels for H100-class mixed precision (prototype API)"),
    # -- torch.nn.init
    ("torch.nn.init", r"normal|uniform|constant|xavier_uniform|xavier_normal|kaiming_uniform|"
                      r"kaiming_normal|orthogonal|sparse|dirac|eye",
     "the deprecated forms without a trailing underscore (deprecated since PyTorch 0.4); the "
     "`_` forms are there"),
    # -- torch.autograd
    ("torch.autograd", r"DeviceType|Profiler.*|kineto_available", _PROFILE),
    ("torch.autograd", r"handle_torch_function|has_torch_function|is_tensor_like", _DISPATCH),
    ("torch.autograd", r"variable", "deprecated: PyTorch's `torch.autograd.variable(...)` only "
                                    "raises, pointing to torch.tensor(...)"),
    ("torch.autograd", r"SavedTensor|enforce_grad_layout_policy|is_view_replay_enabled|"
                       r"is_multithreading_enabled|set_multithreading_enabled|overload|cast",
     _MISC),
    ("torch.autograd.graph", r"set_override_stale_capture_stream|"
                             r"set_warn_on_accumulate_grad_stream_mismatch",
     "switches for the CUDA streams PyTorch's backward runs on: ember's backward queues its "
     "work on the current stream of each device"),
    ("torch.autograd.graph", r"region_activation_memory_budget", _JIT),
    # -- torch.optim
    ("torch.optim", r"swap_in_optimizer_params_and_state", _MISC),
    # -- torch.optim.lr_scheduler
    ("torch.optim.lr_scheduler", r"EPOCH_DEPRECATION_WARNING|Self|TypedDict|SupportsFloat|"
                                 r"override|Counter", _MISC),
    # -- torch.utils.data
    ("torch.utils.data", r"DFIterDataPipe|DataChunk|IterDataPipe|MapDataPipe|"
                         r"functional_datapipe|guaranteed_datapipes_determinism|"
                         r"non_deterministic|argument_validation|runtime_validation|"
                         r"runtime_validation_disabled", _DATAPIPE),
    # -- torch.linalg / special / fft: module docstring fragments
    ("torch.linalg", r"common_notes", _MISC),
    ("torch.special", r"common_args|multi_dim_common|Tensor", _MISC),
    ("torch.fft", r"common_args|factory_common_args|Tensor", _MISC),
]

_COMPILED = [(ns, re.compile(pat), why) for ns, pat, why in EXCLUDE]


def exclusion(namespace: str, name: str) -> str | None:
    """The reason ``namespace.name`` is left out, or None."""
    for ns, pat, why in _COMPILED:
        if ns == namespace and pat.fullmatch(name):
            return why
    return None


def _resolve(path: str):
    """Import ``path`` (a module, or ``module.Class``)."""
    try:
        return importlib.import_module(path)
    except ImportError:
        mod, _, attr = path.rpartition(".")
        if not mod:
            raise
        return getattr(importlib.import_module(mod), attr)


def _own(ns: str, obj) -> bool:
    """Whether ``obj`` belongs to PyTorch (not a ``typing`` helper or a stdlib constant)."""
    if isinstance(obj, types.ModuleType):
        return False
    mod = getattr(obj, "__module__", None)
    if isinstance(obj, (bool, int, float, str, type(None))):
        return ns == "torch"  # torch.pi, torch.inf, torch.newaxis; elsewhere: imports
    if mod is None:
        return True
    return mod.startswith("torch") or mod == "builtins" and ns == "torch.Tensor"


def public_names(ns: str) -> list[str]:
    """PyTorch's public names in namespace ``ns``."""
    obj = _resolve(ns)
    declared = set(getattr(obj, "__all__", ()) or ()) if isinstance(obj, types.ModuleType) \
        else set()
    names = set()
    for n in dir(obj):
        if n.startswith("_"):
            continue
        try:
            v = getattr(obj, n)
        except Exception:  # a lazily imported attribute that fails: not usable, not counted
            continue
        if isinstance(v, types.ModuleType):
            continue
        if n in declared or ns == "torch.Tensor":
            names.add(n)
        elif declared and ns != "torch":
            # a module with __all__: what it leaves out counts only when defined there
            mod = getattr(v, "__module__", None) or ""
            if mod.startswith(ns) or mod.startswith("torch._C"):  # C-defined: torch.fft.hfft2
                names.add(n)
        elif _own(ns, v):
            names.add(n)
    return sorted(names)


def coverage(ns: str, ember_path: str) -> dict:
    names = public_names(ns)
    excluded = {n: exclusion(ns, n) for n in names}
    wanted = [n for n in names if excluded[n] is None]
    try:
        target = _resolve(ember_path)
        error = None
    except Exception as exc:  # not installed / not built yet
        target, error = None, f"{type(exc).__name__}: {exc}"
    have = [n for n in wanted if target is not None and hasattr(target, n)]
    missing = [n for n in wanted if n not in have]
    return {"namespace": ns, "ember": ember_path, "public": len(names), "wanted": len(wanted),
            "have": len(have), "missing": missing, "error": error,
            "excluded": {n: r for n, r in excluded.items() if r is not None}}


def _markdown(rules) -> str:
    lines = ["| namespace | names (regular expression) | reason |", "| --- | --- | --- |"]
    for ns, pat, why in rules:
        lines.append(f"| `{ns}` | `{pat.replace('|', ' ∣ ')}` | {why} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespace", action="append", help="only these PyTorch namespaces")
    ap.add_argument("--missing", action="store_true", help="list the missing names")
    ap.add_argument("--excluded", action="store_true", help="list excluded names and why")
    ap.add_argument("--markdown", action="store_true", help="the exclusion rules as Markdown")
    ap.add_argument("--min", type=float, default=None, help="fail below this percentage")
    a = ap.parse_args(argv)
    if a.markdown:
        print(_markdown(EXCLUDE))
        return 0
    import torch

    print(f"PyTorch {torch.__version__}: ember's coverage of its public API\n")
    rows = [coverage(ns, em) for ns, em in NAMESPACES
            if not a.namespace or ns in a.namespace]
    width = max(len(r["namespace"]) for r in rows)
    print(f"{'namespace':<{width}}  {'ember has':>12}  {'%':>6}  {'excluded':>8}")
    worst = 100.0
    for r in rows:
        pct = 100.0 * r["have"] / r["wanted"] if r["wanted"] else 100.0
        worst = min(worst, pct)
        note = f"  ({r['ember']} not importable: {r['error']})" if r["error"] else ""
        print(f"{r['namespace']:<{width}}  {r['have']:>5} of {r['wanted']:<4}  {pct:>5.1f}%"
              f"  {len(r['excluded']):>8}{note}")
    tot_have = sum(r["have"] for r in rows)
    tot = sum(r["wanted"] for r in rows)
    print(f"{'total':<{width}}  {tot_have:>5} of {tot:<4}  "
          f"{100.0 * tot_have / max(tot, 1):>5.1f}%")
    if a.missing:
        for r in rows:
            if r["missing"]:
                print(f"\nmissing from {r['ember']} ({r['namespace']}, {len(r['missing'])}):")
                print("  " + " ".join(r["missing"]))
    if a.excluded:
        for r in rows:
            if r["excluded"]:
                print(f"\nexcluded from {r['namespace']} ({len(r['excluded'])}):")
                by_reason: dict[str, list[str]] = {}
                for n, why in r["excluded"].items():
                    by_reason.setdefault(why, []).append(n)
                for why, ns in by_reason.items():
                    print(f"  {why}:\n    " + " ".join(ns))
    if a.min is not None and worst < a.min:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
