"""Every legacy trap mxcompat knows, fixed or only documented: the one list.

The documentation's Troubleshooting page is this list, rendered at build time (``markdown()``;
``python -m mxcompat._core.traps`` prints it), ``mxcompat patches`` counts each patch's traps (and
``--json`` lists them), and each trap names the ``mxcompat check`` line that shows it fixed on
this machine (``None`` where no one-second check can).  A test holds the three together: every
patch has a trap, every check and patch a trap names exists, and a trap with a patch says so
in its ``ours`` text.

``patch=None``: not changed by mxcompat (behaviour each release keeps, or an mxcompat problem
of the past); the ``ours`` text says what to do instead.
"""

from collections import namedtuple

Trap = namedtuple("Trap", "patch check symptom cause ours")

HEADER = "| you see (plain MXNet) | cause | with mxcompat |\n|---|---|---|\n"

TRAPS = (
    Trap(
        patch="labels",
        check="labels",
        symptom=(
            "`KeyError: 'softmax_label'` in `executor_group.py` `_collect_arrays`, "
            "from `Module.bind`"
        ),
        cause=(
            "`Module.load` of a Gluon export keeps the default "
            "`label_names=('softmax_label',)`; the symbol takes no label"
        ),
        ours=(
            "the label is dropped, one `MXCompatWarning`; `bind`/`predict` work (patch `labels`)"
        ),
    ),
    Trap(
        patch="labels",
        check="labels",
        symptom=(
            "`UserWarning: You created Module with Module(..., "
            "label_names=['softmax_label']) but input with name 'softmax_label' is "
            "not found in symbol.list_arguments()` on every module"
        ),
        cause="same",
        ours="replaced by one `MXCompatWarning` (patch `labels`)",
    ),
    Trap(
        patch="labels",
        check="labels",
        symptom=(
            "`UserWarning: … label_names=['label'] but input with name 'label' is "
            "not found in symbol.list_arguments(). Did you mean one of: data "
            "softmax_label`, then `KeyError: 'label'` from `Module.bind`, or "
            "`ValueError: Unknown initialization pattern for softmax_label` from "
            "`init_params`, or a loaded model that trains against a constant (the "
            "batches' labels are ignored)"
        ),
        cause=(
            "the label name (`label_names`, or the iterator's `label_name`) is not the"
            " symbol's label input (`<loss name>_label`); MXNet only warns and makes "
            "the real label a *parameter* of the module"
        ),
        ours=(
            "`ValueError: mxcompat: Module(..., label_names=('label',)): 'label' is not"
            " an input of the symbol, whose label input is 'softmax_label'. Pass "
            "label_names=['softmax_label'] and give the data iterator's label the same "
            "name (…)` at `Module(...)`, or the same from `bind` when the iterator's "
            "label carries the wrong name (patch `labels`)"
        ),
    ),
    Trap(
        patch="bare_names",
        check="bare_names",
        symptom=(
            "`ValueError: You created Module with Module(..., "
            "fixed_param_names=['k', 'w']) but input with name 'k' is not found`"
        ),
        cause="`fixed_param_names=('kw')` is the string `'kw'`",
        ours="read as `['kw']`, one `MXCompatWarning` (patch `bare_names`)",
    ),
    Trap(
        patch="numpy_names",
        check="numpy",
        symptom=(
            "`AttributeError: module 'numpy' has no attribute 'bool'` at `import "
            "mxnet` (`mxnet/numpy/utils.py`)"
        ),
        cause="MXNet 1.6–1.9 on NumPy ≥ 1.24",
        ours=(
            "`import mxcompat` first: the name is restored as `import mxnet` starts "
            "(patch `numpy_names`)"
        ),
    ),
    Trap(
        patch="numpy_names",
        check="numpy",
        symptom="`` `np.PZERO` was removed in the NumPy 2.0 release `` at `import mxnet`",
        cause="MXNet 1.7–1.9 on NumPy 2",
        ours="same (patch `numpy_names`)",
    ),
    Trap(
        patch="distutils",
        check=None,
        symptom="`ModuleNotFoundError: No module named 'distutils'` at `import mxnet`",
        cause="MXNet 1.6–1.9 on Python ≥ 3.12 without setuptools",
        ours="same (patch `distutils`)",
    ),
    Trap(
        patch="distutils",
        check=None,
        symptom=(
            "`ModuleNotFoundError: No module named 'distutils'` at your own "
            "`from distutils.version import LooseVersion`"
        ),
        cause="legacy code on Python ≥ 3.12 without setuptools (any MXNet release)",
        ours=(
            "works from `import mxnet` on, beside every release 1.3.1 … 1.9.1 (patch "
            "`distutils`); above `import mxnet` it still fails, as without mxcompat: import "
            "mxnet first, or use `looseversion.LooseVersion` / `packaging.version`"
        ),
    ),
    Trap(
        patch="numpy2",
        check="numpy_fixes",
        symptom=(
            "`MXNetError: Invalid Parameter format for indices` (e.g. "
            "`gluon.utils.split_data`), or for `shape`"
        ),
        cause="NumPy 2 scalar reprs (`np.int64(2)`) inside operator parameters",
        ours="parameters are written as NumPy 1 wrote them (patch `numpy2`)",
    ),
    Trap(
        patch="convert",
        check="convert",
        symptom="`KeyError`/shape errors after `mod.save_params` + `net2.load_params`",
        cause="Gluon parameter prefixes differ",
        ours="`mod.to_gluon(net2)` matches by structure (patch `convert`)",
    ),
    Trap(
        patch="freeze",
        check="freeze",
        symptom='a "fixed" weight that still moves (zeroed gradient, momentum/wd)',
        cause="only `fixed_param_names` at construction is honoured",
        ours="`mxcompat.freeze(name)` (patch `freeze`)",
    ),
    Trap(
        patch="frozen_statistics",
        check="frozen_statistics",
        symptom=(
            "a frozen stage's BatchNorm running mean/variance "
            "(`*_moving_mean`/`*_moving_var` aux states, Gluon "
            "`running_mean`/`running_var`) still change during training after "
            '`mxcompat.freeze("stage1_*")`'
        ),
        cause=(
            "BatchNorm moves its statistics in the backward of every training step "
            "(every release); no optimizer is involved, so an update skip cannot hold "
            "them"
        ),
        ours=(
            "a pattern that matches a statistic holds it bit for bit through training "
            "(the forward still normalises with the batch's statistics; outputs and "
            "gradients unchanged) (patch `frozen_statistics`)"
        ),
    ),
    Trap(
        patch="fixed_param_names",
        check="fixed_param_names",
        symptom=(
            'legacy code that logs `module._fixed_param_names` ("Fixed model '
            'parameters: …") shows nothing frozen through `mxcompat.freeze`'
        ),
        cause="the attribute holds the constructor's `fixed_param_names` only",
        ours=(
            "it lists the module's own fixed names, then the parameters the registry "
            "freezes, at each read (`Module`, `BucketingModule`) (patch "
            "`fixed_param_names`)"
        ),
    ),
    Trap(
        patch="onednn_fc_bias",
        check="onednn_fc_bias",
        symptom=(
            "`fixed_param_names=['fc1_weight']` and `fc1_bias` never trains either "
            "(MXNet 1.7–1.9 pip wheels, CPU); no error, no warning"
        ),
        cause=(
            "oneDNN's FullyConnected backward skips the bias gradient when the "
            "weight's `grad_req` is `'null'`"
        ),
        ours=(
            "the weight stays fixed bit for bit and the bias trains (patch "
            "`onednn_fc_bias`; turn it off to get MXNet's behaviour back)"
        ),
    ),
    Trap(
        patch="int_division",
        check="int_division",
        symptom=(
            "the process dies: `Floating point exception` (exit status 136, signal "
            "SIGFPE), no traceback, after `int_array / 0.5` (or `/ 0`, `/= -0.3`; "
            "`int8_array / 256.0`)"
        ),
        cause=(
            "every MXNet 1.x converts the scalar to the array's integer dtype (0.5 → "
            "0) and divides by that 0"
        ),
        ours=(
            "`ZeroDivisionError: mxcompat: int32 NDArray / 0.5 divides by zero: MXNet "
            "converts the scalar to the array's dtype (int32 0), and an integer "
            "division by 0 kills the process (SIGFPE). Divide a float copy instead: "
            "x.astype('float32') / 0.5` (patch `int_division`)"
        ),
    ),
    Trap(
        patch="int_division",
        check="int_division",
        symptom=(
            "the same death after `x / y`, `x /= y`, `mx.nd.broadcast_div(x, y)` or "
            "`mx.nd.elemwise_div(x, y)` on integer arrays"
        ),
        cause="the divisor holds a 0",
        ours=(
            "`ZeroDivisionError: mxcompat: int32 NDArray / int32 NDArray divides by "
            "zero: the divisor holds 0 at index (1,), …` naming where (patch "
            "`int_division`)"
        ),
    ),
    Trap(
        patch="bfloat16_name",
        check=None,
        symptom=(
            "`TypeError: data type 'bfloat16' not understood` from `mx.nd.amp_cast(x, "
            "dtype='bfloat16')` (or `Cast`, `zeros`, `mx.sym.amp_cast`…) on one machine, while "
            "the same code works on another (MXNet 1.7–1.9)"
        ),
        cause=(
            "MXNet's operators read `dtype` with `numpy.dtype()`, which knows `'bfloat16'` "
            "only once ml_dtypes is loaded; MXNet loads it only by the way, through onnx, "
            "where onnx is installed"
        ),
        ours=(
            "the name works in every operator with or without onnx and ml_dtypes, on NumPy 1 "
            "and 2; NumPy itself is unchanged, and `x.astype`, `mx.nd.array` and `mx.sym.var` "
            "still want MXNet's own dtype, `np.dtype([('bfloat16', np.uint16)])` (patch "
            "`bfloat16_name`)"
        ),
    ),
    Trap(
        patch="unbound_get_params",
        check="unbound_get_params",
        symptom=(
            "`AssertionError` (no message) from `module.py` `get_params` after "
            "`Module.load(prefix, epoch)`, or from `save_checkpoint` of a loaded "
            "module (MXNet 1.3–1.5)"
        ),
        cause="1.3–1.5 assert the module is bound; 1.6+ return the loaded parameters",
        ours="the loaded parameters, as on 1.6+ (patch `unbound_get_params`)",
    ),
    Trap(
        patch="unbound_get_params",
        check="unbound_get_params",
        symptom=(
            "`AssertionError` (no message) from `get_params` on a module never "
            "initialised (every release)"
        ),
        cause="MXNet asserts `params_initialized`",
        ours=(
            "`AssertionError: mxcompat: Module.get_params(): the module has no "
            "parameters yet; bind it and call init_params() or set_params(arg_params, "
            "aux_params) first, or create it with Module.load(prefix, epoch)` (or, "
            "bound: `call init_params() or set_params(arg_params, aux_params) first`) "
            "(patch `unbound_get_params`)"
        ),
    ),
    Trap(
        patch="trainer_kvstore_init",
        check=None,
        symptom=(
            "workers of a distributed Gluon job (`dist_sync`, `Trainer(..., "
            "update_on_kvstore=False)`; likely on MXNet 1.7–1.9, rare on 1.3–1.6) "
            "end with different weights from the first step on; no error, no warning"
        ),
        cause=(
            "the Trainer sets its kvstore up inside the first `step()`: the initial "
            "weights' broadcast (init and pull before 1.7) and the first gradients' "
            "pushpull race, and a worker "
            "other than rank 0 can receive the summed gradients as its weights"
        ),
        ours=(
            "every worker starts from the same weights and stays bit-identical to the "
            "others (patch `trainer_kvstore_init`)"
        ),
    ),
    Trap(
        patch="kvstore_server",
        check=None,
        symptom=(
            "anyone who can reach a kvstore server's port (`dist_sync`, `dist_async`) runs "
            "code on it: the server unpickles whatever arrives as an optimizer (every release)"
        ),
        cause=(
            "`KVStore.set_optimizer` pickles the optimizer on a worker and each server hands "
            "the bytes to `pickle.loads`, which calls any function a pickle names"
        ),
        ours=(
            "a server unpickles only MXNet's optimizer and scheduler classes, NumPy's scalars "
            "and dtypes, plain data and the classes named in `MXCOMPAT_KVSTORE_CLASSES`; "
            "anything else is refused with one error in the server's log naming the class, "
            "and the server serves on (patch `kvstore_server`; the server needs mxcompat: "
            "`import mxcompat` first in the script, or `mxcompat run`)"
        ),
    ),
    Trap(
        patch="autograd_threads",
        check=None,
        symptom=(
            "several threads record autograd at once on one model (GluonNLP's `Parallel`, "
            "training steps handed to a thread pool), and runs fail at random: `MXNetError: "
            "Check failed: type_ != nullptr The any container is empty "
            "requested=N5mxnet10Imperative6AGInfoE`, `free(): invalid next size`, "
            "`Segmentation fault` (every release)"
        ),
        cause=(
            "autograd's recording flag is per thread, but recording an operator reads and "
            "writes the autograd entries of the arrays it reads with no lock: threads that "
            "share parameters race"
        ),
        ours=(
            "one `MXCompatWarning` when a thread enters `autograd.record()` while another "
            "records, naming the race and the ways on (record in one thread, or use "
            "processes; threads on arrays of their own, such as per-device copies, do not "
            "race); nothing MXNet computes is changed (patch `autograd_threads`); "
            "`mxcompat scan` finds `autograd.record()` in functions handed to threads (MXC012)"
        ),
    ),
    Trap(
        patch="dataloader_teardown",
        check=None,
        symptom=(
            "a training or test run that stops for good, no error, at a multi-worker "
            "`gluon.data.DataLoader` being dropped (MXNet 1.4–1.9, once in a few hundred "
            "to a few thousand loaders); every worker process already gone"
        ),
        cause=(
            "`DataLoader.__del__` calls its `multiprocessing.Pool`'s `terminate()`, which "
            "can kill a worker while it sends a batch: the result queue's lock stays held "
            "and `terminate()` waits for it forever"
        ),
        ours=(
            "the workers finish the batches in flight and exit by themselves; "
            "`terminate()` only for a worker still running after a minute (patch "
            "`dataloader_teardown`)"
        ),
    ),
    Trap(
        patch="dataloader_start_method",
        check=None,
        symptom=(
            "Python 3.14+ on Linux, a script without `if __name__ == '__main__':` and a "
            "`DataLoader(..., num_workers=2)`: `RuntimeError: An attempt has been made to "
            "start a new process before the current process has finished its bootstrapping "
            "phase`, then `ConnectionResetError` (3.14) or `multiprocessing.TimeoutError` "
            "after 120 s (3.15); or a `transform` lambda that cannot be pickled"
        ),
        cause=(
            "Python 3.14 made `forkserver` multiprocessing's default start method on Linux; "
            "MXNet starts its workers from the default, which was `fork` on every Python it "
            "was released for"
        ),
        ours=(
            "MXNet's workers fork unless the script chose a start method "
            "(`set_start_method`); the script's own multiprocessing is untouched (patch "
            "`dataloader_start_method`)"
        ),
    ),
    Trap(
        patch="dataloader_spawn",
        check=None,
        symptom=(
            "`multiprocessing.set_start_method('spawn')` or `'forkserver'` and a "
            "multi-worker `DataLoader`: every worker dies importing MXNet on NumPy 2 "
            "(`np.PZERO was removed`) under pytest or `python -c`; with an NDArray dataset "
            "`ValueError: bad value(s) in fds_to_keep`, `Failed to map shared memory`, `Bad "
            "file descriptor`, or a wait until MXNet's 120 s timeout"
        ),
        cause=(
            "a spawned worker is a fresh interpreter that imports MXNet without mxcompat; "
            "MXNet's NDArray reducer frees the shared-memory copy whose file descriptor the "
            "process launch passes on after pickling"
        ),
        ours=(
            "the worker imports mxcompat before it unpickles anything of MXNet, and the copy "
            "stays alive until the worker has started; a lambda still gets pickle's error "
            "(patch `dataloader_spawn`)"
        ),
    ),
    Trap(
        patch="scipy_chisquare",
        check=None,
        symptom=(
            "`ValueError: For each axis slice, the sum of the observed frequencies must "
            "agree with the sum of the expected frequencies to a relative tolerance of …` "
            "from `mx.test_utils.chi_square_check` / `verify_generator` (MXNet's own "
            "`test_random.py` generator tests, every release, SciPy ≥ 1.7)"
        ),
        cause=(
            "the check's expected counts leave a distribution's tails out and are "
            "truncated to integers; SciPy 1.7 made `scipy.stats.chisquare` refuse counts "
            "whose sums differ, where older SciPy computed the test from them as given"
        ),
        ours=(
            "the `chisquare` MXNet's check calls returns the statistic and p-value SciPy "
            "< 1.7 computed; your own `scipy.stats.chisquare` calls still raise (patch "
            "`scipy_chisquare`)"
        ),
    ),
    Trap(
        patch="onnx",
        check="onnx",
        symptom=(
            "`ImportError: Onnx and protobuf need to be installed` from "
            "`mx.onnx.export_model` (1.9) or `mx.contrib.onnx.export_model` (1.3–1.8) "
            "with onnx installed; past that, graphs onnx's checker rejects"
        ),
        cause=(
            "onnx 1.19 removed `onnx.mapping`, which every MXNet exporter reads; today's "
            "onnx checks a graph against its own newest opset"
        ),
        ours=(
            "the exporters run on today's onnx (onnx itself unchanged outside an export); "
            "`mxcompat.to_onnx(model)` exports in memory and verifies in onnxruntime "
            "(patch `onnx`)"
        ),
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "a Gluon `Dense` bias that never trains after `dense.weight.grad_req = "
            "'null'` (MXNet 1.7–1.9 pip wheels, CPU)"
        ),
        cause="the same oneDNN backward",
        ours=(
            "not changed by mxcompat: `mxcompat.freeze(dense.weight.name)` freezes the "
            "weight alone (it never sets `grad_req`)"
        ),
    ),
    Trap(
        patch="ndarray_to_numpy",
        check="numpy_fixes",
        symptom=(
            "`mx.test_utils.same(a, b)` / `np.array_equal(a, b)` is `False` for two "
            "equal NDArrays; `np.asarray(nd)`: `ValueError: setting an array element"
            " with a sequence … exceed the maximum number of dimensions` (NumPy ≥ 2)"
        ),
        cause="`NDArray` has no `__array__`: NumPy sees an opaque sequence",
        ours="NumPy gets the numbers (patch `ndarray_to_numpy`)",
    ),
    Trap(
        patch="ndarray_to_numpy",
        check="numpy_fixes",
        symptom=(
            "`ValueError: Could not convert … to a NumPy dtype (via .dtype value "
            "<class 'numpy.float32'>)` from `x.astype(y)` (NumPy ≥ 2.3)"
        ),
        cause="`NDArray.dtype` is a class; NumPy ≥ 2.3 no longer reads a class there",
        ours="`y`'s dtype is passed (patch `ndarray_to_numpy`)",
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "`Error in sitecustomize` in a child Python under `mxcompat run` "
            "(another venv, the system Python, pip's build isolation)"
        ),
        cause=("the child inherits `PYTHONPATH` with mxcompat's bootstrap but has no mxcompat"),
        ours=(
            "the bootstrap steps aside silently where mxcompat is not installed; your "
            "own `sitecustomize` still runs, exactly once"
        ),
    ),
    Trap(
        patch="python_oo",
        check=None,
        symptom=(
            "`TypeError: sequence item 0: expected str instance, NoneType found` in "
            "`mxnet/ndarray_doc.py` at `import mxnet` under `python -OO` / "
            "`PYTHONOPTIMIZE=2` (every 1.x release)"
        ),
        cause="`-OO` strips the docstrings MXNet joins into its operators' documentation",
        ours=(
            "MXNet imports and runs (patch `python_oo`, applies under `-OO` only); "
            "`import mxcompat` itself works under `-O`/`-OO`"
        ),
    ),
    Trap(
        patch="operator_cache",
        check=None,
        symptom=(
            "`import mxnet` takes 0.7–2 s in every process: each command, each test process, "
            "each DataLoader worker that starts a fresh interpreter (spawn, forkserver: "
            "Python 3.14's default)"
        ),
        cause=(
            "MXNet writes Python source for each of its operators (about 2,600 functions on "
            "1.9.1) and compiles it at every import, the same code each time"
        ),
        ours=(
            "the compiled code is cached per user (`~/.cache/mxcompat/operators`, "
            "`MXCOMPAT_OPERATOR_CACHE`) and reused from the second import on, checked against "
            "the library, MXNet, Python and mxcompat; any doubt takes MXNet's own path (patch "
            "`operator_cache`)"
        ),
    ),
    Trap(
        patch="checked_loads",
        check=None,
        symptom=(
            "the process dies (SIGSEGV, `terminate called`, killed for memory) in `mx.nd.load`, "
            "`mx.sym.load` + `infer_shape`, `Module.load`, `SymbolBlock.imports` of a damaged "
            "file (truncated, a size field of 2**31, a head naming a missing node)"
        ),
        cause=(
            "MXNet's C++ loaders trust the counts, sizes and node indices a file names "
            "(every 1.x release)"
        ),
        ours=(
            "the file's structure is checked first: one `CheckpointError` (also an "
            "`MXNetError`) naming the file, the byte offset and what was expected; a "
            "well-formed file loads as before (patch `checked_loads`)"
        ),
    ),
    Trap(
        patch="exec_stack",
        check=None,
        symptom=(
            "`OSError: …/mxnet/libmxnet.so: cannot enable executable stack as shared object "
            "requires: Invalid argument` at `import mxnet` (MXNet 1.3–1.6 wheels, glibc ≥ 2.41)"
        ),
        cause=(
            "those wheels' `libmxnet.so` asks for an executable stack (`PT_GNU_STACK` RWE); "
            "since glibc 2.41 `dlopen` refuses such a library"
        ),
        ours=(
            "MXNet loads a copy without that flag, cached per user (`MXCOMPAT_LIB_CACHE`); "
            "the installed files are untouched (patch `exec_stack`, glibc ≥ 2.41 only)"
        ),
    ),
    Trap(
        patch="cuda_libs",
        check="gpu",
        symptom=(
            "`OSError: libcudart.so.11.0: cannot open shared object file` (or `libcudnn.so.8`, "
            "`libcublas.so.11`…) at `import mxnet` with an `mxnet-cu11X` wheel on a host with "
            "CUDA 12/13 or none (Colab, SageMaker, today's images)"
        ),
        cause="the CUDA wheels link the CUDA 11 libraries and cuDNN 8 by name",
        ours=(
            "`mxcompat install mxnet-cu11X==V` installs the `nvidia-*-cu11` packages its "
            "`libmxnet.so` names; before MXNet loads, those the system lacks are loaded from "
            "them, and one missing is one error naming its package (patch `cuda_libs`, "
            "`MXCOMPAT_CUDA_LIBS=pip` or `system`)"
        ),
    ),
    Trap(
        patch="gpu_arch",
        check="gpu",
        symptom=(
            "`NVRTC Compilation failed` … `invalid value for --gpu-architecture` on an Ada GPU "
            "(sm_89: RTX 40xx, L4, L40); `no kernel image is available for execution on the "
            "device` on Hopper/Blackwell (H100, H200, B200)"
        ),
        cause=(
            "fusion compiles for the device with NVRTC, which knows sm_89 from 11.8; the 1.9.1 "
            "wheels carry machine code up to sm_86 and no PTX"
        ),
        ours=(
            "at the first `mx.gpu(i)`: fusion off with one warning where NVRTC cannot target "
            "the GPU; one error naming the GPU, its sm and the wheel's list where no code runs "
            "on it, with the ways on (`mx.cpu()`, `mxcompat.to_torch`) (patch `gpu_arch`)"
        ),
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "every mxcompat warning printed twice after `logging.basicConfig(...)` (older mxcompat)"
        ),
        cause="it was issued through `warnings` and logged",
        ours=(
            "issued through `warnings` only; `logging.captureWarnings(True)` routes it to logging"
        ),
    ),
    Trap(
        patch=None,
        check=None,
        symptom="`import mxnet` failing inside mxcompat's import hook (older mxcompat)",
        cause="an exception in a patch propagated into the import",
        ours="a patch that cannot be applied warns once and is off; the import succeeds",
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "`split_and_load`/`split_data(even_split=False)` slices of other sizes "
            "after an upgrade (1.6 → 1.7)"
        ),
        cause=(
            "1.3–1.6 give the remainder to the last slice, 1.7+ spread it over the first slices"
        ),
        ours=(
            "not changed by mxcompat (neither is a bug): see [Differences between "
            "releases](differences.md); the tests pin each release"
        ),
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "`UnicodeDecodeError: 'utf-8' codec can't decode byte …` from "
            "`mx.image.ImageIter(path_imglist=...)` (or `ImageDetIter`, `im2rec.py`) on "
            "Python ≥ 3.15, for a `.lst` that an earlier Python read"
        ),
        cause=(
            "Python 3.15 opens text files as UTF-8 whatever the locale (PEP 686); MXNet "
            "reads and `im2rec.py` writes `.lst` files in the default encoding, so a list "
            "made under a non-UTF-8 locale (e.g. ISO-8859-1) with non-ASCII image names no "
            "longer decodes"
        ),
        ours=(
            "left to Python (guessing the file's encoding could read a UTF-8 list wrongly, "
            "silently): convert the list once (`iconv -f ISO-8859-1 -t UTF-8`), or run with "
            "`PYTHONUTF8=0` (`-X utf8=0`) under the locale that wrote it"
        ),
    ),
    Trap(
        patch=None,
        check=None,
        symptom=(
            "`tarfile.AbsolutePathError`, `OutsideDestinationError`, "
            "`LinkOutsideDestinationError` or `SpecialFileError` from your own "
            "`tar.extractall(...)` on Python ≥ 3.14, or extracted files not owned by the "
            "archive's user (a DeprecationWarning about it on 3.12/3.13)"
        ),
        cause=(
            "Python 3.14 extracts with the `'data'` filter by default (PEP 706): it refuses "
            "absolute names, links leading out of the target and device files, and drops "
            "owners and group/other write bits; MXNet's own extractions (CIFAR-10/100) "
            "are plain files and unaffected"
        ),
        ours=(
            "left to Python (a safety filter): pass `filter='data'` everywhere (Python ≥ 3.12 "
            "and the patch releases with PEP 706), or `filter='fully_trusted'` for an archive "
            "you trust that needs its links or owners; `mxcompat scan` finds the calls (MXC011)"
        ),
    ),
)


def for_patch(name):
    """The traps the patch ``name`` handles, in list order."""
    return tuple(t for t in TRAPS if t.patch == name)


def markdown():
    """The Troubleshooting table (docs/troubleshooting.md renders it at build time)."""
    return HEADER + "".join("| %s | %s | %s |\n" % (t.symptom, t.cause, t.ours) for t in TRAPS)


if __name__ == "__main__":
    # python -m mxcompat._core.traps: print the table.
    import sys

    sys.stdout.write(markdown())
