"""The one home of every "this changed in MXNet 1.x" fact.

Each fact names the first release that behaves the new way, so code elsewhere asks
``since(FACT)`` instead of comparing version strings.  Sources: the wheels of 1.3.1 … 1.9.1,
read side by side and run on this project's test stacks; each fact's comment says what was
seen.
"""

import functools
import importlib
import os
import re
import sys

# Supported range, declared once: the version gate and its messages use it, the README and
# the docs state it (tests/core/test_versions.py and docs/test_built.py compare).
MIN_VERSION = (1, 3)
MAX_VERSION = (2, 0)  # exclusive
SUPPORTED = ">=%d.%d, <%d" % (MIN_VERSION + MAX_VERSION[:1])

# --- facts, each with the release it changed in -------------------------------------------

# mxnet/numpy (imported by mxnet/__init__) uses np.bool and distutils from 1.6.
NUMPY_SUBPACKAGE = (1, 6)
# Every release writes Python source for each operator while `import mxnet` runs and exec()s
# it: base._init_op_module(root, module, make_op_func) (and _init_np_op_module from 1.6, for
# the numpy/npx namespaces) calls make_op_func(handle, op_name, func_name), register.py's
# _make_ndarray_function / _make_symbol_function (the same code in 1.3.1 ... 1.9.1), which
# looks up _generate_*_function_code in its module at each call, exec()s the source it returns
# and names the function.  The source holds the operator's handle, an address of the process,
# as a literal; the rest is the same on every import of the same libmxnet.so.
OPERATORS_GENERATED_AT_IMPORT = (1, 3)
# MXNet imports distutils.version while `import mxnet` runs from 1.6 (numpy_dispatch_protocol;
# numpy_op_fallback from 1.7); 1.3-1.5 name distutils only in util.makedirs' Python 2 branch.
# On Python 3.12+ patches/distutils.py serves distutils.version from `import mxnet` on for
# every release all the same: users' own `from distutils.version import LooseVersion` works
# beside any release, not only beside the ones that need it themselves.
MXNET_IMPORTS_DISTUTILS = (1, 6)
# gluon.utils.clip_global_norm computes its scale with NDArrays from 1.4; 1.3.1 computes it
# from a NumPy float32 scalar (`max_norm / (total_norm + 1e-8)`), which NEP 50 (NumPy 2) keeps
# in float32 where NumPy 1 promoted to float64.
CLIP_GLOBAL_NORM_NDARRAY = (1, 4)
# oneDNN FullyConnected's backward skips the *bias* gradient when the weight's grad_req is
# 'null' (native fixed_param_names=['fc1_weight'] also stops fc1_bias) in the oneDNN builds from
# 1.7 (verified on the 1.7.0.post2, 1.8.0.post0 and 1.9.1 wheels; the 1.5.1 and 1.6.0 wheels,
# built without MKLDNN, train the bias; data gradients and Convolution, Deconvolution,
# BatchNorm and LayerNorm are not affected).  CPU executors only (oneDNN kernels); Gluon's
# weight.grad_req = 'null' stops a Dense bias the same way (checked on 1.7.0.post2 and 1.9.1).
ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS = (1, 7)
# MXNET_SUBGRAPH_BACKEND defaults to MKLDNN in the oneDNN builds from 1.6 (the 1.6.0 wheel has
# no oneDNN; the 1.7.0.post2, 1.8.0.post0 and 1.9.1 wheels do): an executor that needs no
# gradient gets the inference-only fusions at bind, e.g. FullyConnected + tanh as one oneDNN
# kernel (a post-op).  Its tanh can round otherwise than the separate kernel: on an AVX2 AMD
# EPYC the next layer's weight gradient moved by one ulp on 1.7.0.post2 (and the weight Adam
# trained from it) and 1.8.0.post0 (the weight not), not on 1.9.1.
ONEDNN_NO_GRAD_EXECUTOR_FUSED = (1, 6)
# gluon.Parameter.dtype is a property whose setter casts the data from 1.5; before, a plain
# attribute (convert/params.py records a dtype without casting).
PARAMETER_DTYPE_PROPERTY = (1, 5)
# mxnet.runtime.Features (is_enabled('MKLDNN')) exists from 1.5 (import mxnet.runtime first).
RUNTIME_FEATURES = (1, 5)
# contrib.quantization.quantize_model_mkldnn exists from 1.6 (MKLDNN builds only run it).
QUANTIZE_MODEL_MKLDNN = (1, 6)
# Quantized CPU graphs are tested from 1.8 (uint8, the MKLDNN wheels): 1.7.0.post2's oneDNN
# refuses some CPUs ("x2APIC is not supported" on AMD EPYC VMs) and aborts on int8 on others,
# so whether it runs depends on the machine.
QUANTIZED_CPU = (1, 8)
# contrib.quantization accepts quantized_dtype='auto' from 1.5.
QUANTIZE_AUTO_DTYPE = (1, 5)
# Module.get_params() works on an unbound module (e.g. from Module.load) from 1.6; before, it
# asserts the module is bound.  BucketingModule's changed with it (1.6 adds
# BucketingModule.load); SequentialModule's asserts it is bound on every release.  Every
# release asserts params_initialized with a bare AssertionError (no message).
UNBOUND_GET_PARAMS = (1, 6)
# gluon.data.DataLoader(num_workers > 0) runs its workers as a multiprocessing.Pool from 1.4
# and terminate()s it in __del__ (1.3 starts and shuts down its own worker processes).  A
# worker killed mid-send leaves the result queue's lock held and terminate() waits forever
# (seen on 1.4.1 and 1.9.1, Python 3.11-3.13: patches/dataloader_teardown.py).
DATALOADER_WORKER_POOL = (1, 4)
# Every release's DataLoader starts its workers from multiprocessing's *default* start method
# (1.3: Process per iterator, 1.4+: Pool, DataLoaderV1: Process; thread_pool=True: threads),
# which was fork on Linux on every Python MXNet was released for.  Under spawn or forkserver
# (a fresh interpreter per worker) two things break, on every Python: the child imports MXNet
# without mxcompat (NumPy 2: "np.PZERO was removed"), and reduce_ndarray passes the fd of a
# cpu_shared copy it frees before the child is started (the Popen only records the fd):
# "bad value(s) in fds_to_keep", "Failed to map shared memory", or a wait until the 120 s
# timeout (seen on 1.3.1 ... 1.9.1, Python 3.7-3.15: patches/dataloader_spawn.py).
DATALOADER_DEFAULT_START_METHOD = (1, 3)
# DataLoader(timeout=120) from 1.6: a batch a worker never returns raises
# multiprocessing.TimeoutError after that long; before, the iterator waits for it forever.
DATALOADER_TIMEOUT = (1, 6)
# Up to 1.7 the engine does not order reads of BatchNorm's running statistics after the write
# that a Gluon training step (autograd backward) makes: a copy pushed right after
# Trainer.step can read the previous values (measured: 1.3-1.6 5/40 runs, 1.7 29/40, and 1.7
# even asnumpy 3/40; 1.8 and 1.9 0/40).  convert/gluon_to_module.py waits for the engine
# before copying.
GLUON_AUX_WRITES_ORDERED = (1, 8)
# contrib.svrg_optimization.SVRGModule (from 1.4) reads every parameter's gradient, of the
# module and of its auxiliary module, in update() and update_full_grads(): a parameter bound
# without one (fixed_param_names) fails there ("broadcast_add expects 2 inputs, but got 1",
# 1.4.1, 1.5.1, 1.9.1).  freeze/module.py gives an SVRGModule's frozen parameters their
# gradients, and the update skip holds them.
SVRG_READS_EVERY_GRADIENT = (1, 4)
# BatchNorm's running mean/variance move during the *backward* of a training step, not in
# the training forward, on every release (measured on 1.3.1 ... 1.9.1: Module executors and
# Gluon, hybridized or not, oneDNN or not); freeze/frozen_statistics.py works around the backward.
BATCHNORM_STATS_MOVE_IN_BACKWARD = (1, 3)
# BatchNorm's running statistics move (in the backward, above) only where a backward runs
# through the BatchNorm: a Module whose BatchNorm needs no gradient at all (gamma and beta
# fixed, nothing before it trained, no input gradient) is bound without that backward, and
# its statistics stay where they are (measured with fixed_param_names on 1.3.1, 1.5.1 and
# 1.9.1; a conv -> BatchNorm -> conv net, 6 steps).
# And a Module executor's BatchNorm backward writes them without the engine ordering later
# reads after that write: asnumpy(), get_params() or a copy right after a step can see the
# values from before it (stale in 8-12 of 20 runs on 1.3.1, 4-6/20 on 1.5.1, 3-8/20 on 1.9.1,
# oneDNN or not, mxcompat imported or not); after mx.nd.waitall() every read agrees.  Read so,
# the same training seems to leave a statistic at 0 in one run and moved in the next.
BATCHNORM_STATS_WRITE_UNORDERED = (1, 3)
# gluon.Trainer given a dict of Parameters (collect_params()) indexes them in its name-sorted
# order from 1.7 (read in 1.7.0's and 1.9.1's trainer.py; 1.6.0 not read), in the dict's own
# order up to 1.5.1: a states file it writes (keyed by that index, naming no parameter) is
# read so.
TRAINER_SORTS_PARAMS = (1, 7)
# An executor whose graph holds a temporary-space resource (FullyConnected from 1.5; relu,
# elemwise_add, sum on every release), freed after the thread that bound it has ended, leaves
# the engine with an operation that never runs: every later mx.nd.waitall() waits forever.
# Each thread has its own resource manager, destroyed with the thread up to 1.5; the
# executor's release then writes to its freed variables.  From 1.6 MXNet is built to keep each
# thread's stores until the process exits.  Measured without mxcompat (bind in a thread, let
# it end, free the executor, waitall): hangs on 1.3.1, 1.4.1 (relu, add; not FullyConnected)
# and 1.5.1 (FullyConnected too), never on 1.6.0 and 1.9.1; freed while its thread still
# runs, never.  So mxcompat never holds the last reference to another thread's Module.
EXECUTOR_OUTLIVES_ITS_THREAD = (1, 6)
# Symbol.__iter__ goes by index from 1.5; before, by output *name* (one list_outputs() per
# item: quadratic, e.g. SymbolBlock.__init__ walks get_internals() so; wrong for duplicate
# output names, which 1.3/1.4's SymbolBlock then rejects).
SYMBOL_ITER_BY_INDEX = (1, 5)
# NDArray.shape reads MXNDArrayGetShapeEx (int dims, ndim -1 for an unknown shape) from 1.5;
# before, MXNDArrayGetShape (mx_uint dims).  convert/ndarray_c_api.py calls the same one.
NDARRAY_SHAPE_EX = (1, 5)
# .params files (torch/checkpoint.py reads every layout whatever the release): NDArray::Save
# writes the V3 magic (NumPy shape semantics: 0-d arrays, ndim -1 for none) inside
# mx.util.np_shape(True) from 1.5, V2 otherwise; bool arrays (type flag 7) are made and saved
# from 1.6; flags 8-12 (int16 ... bfloat16) are defined from 1.7, and the pip wheels make
# bfloat16 arrays from 1.7 (amp_cast on CPU, given MXNet's own dtype, a structured uint16 named
# bfloat16; the operators' "bfloat16" only where numpy.dtype() knows it, from ml_dtypes, which
# 1.7+ import through onnx: patches/bfloat16_name.py).  Seen in the wheels' mshadow, by saving.
NDARRAY_V3_SAVE = (1, 5)
NDARRAY_BOOL = (1, 6)
NDARRAY_BFLOAT16 = (1, 7)
# Builds with 64-bit tensor sizes (runtime feature INT64_TENSOR_SIZE) read and make shapes
# with the *64 C calls from 1.6 (int64_tensor_size() below); before 1.6 the Python side never
# did, and the pip wheels of every release are built without it.
INT64_TENSOR_SIZE_CALLS = (1, 6)
# An integer division by 0 inside MXNet's CPU kernels kills the process with SIGFPE on every
# release (measured alike on 1.3.1 ... 1.9.1; none raises instead): these operators on
# integer NDArrays.  `x / s` and `x /= s` call _div_scalar, which converts the scalar to the
# array's dtype first (int32_array / 0.5 divides by 0); `x / y` and `x /= y` call
# broadcast_div.  Nothing else traps: `%` gives 0 for a 0 divisor, `0.5 / x` (_rdiv_scalar)
# does not divide by the cast, NDArray has no `//` (TypeError), and mx.np arrays (1.6+)
# divide integers into float32 (`/=` on an integer mx.np array is MXNet's type error).
INT_DIVISION_SIGFPE = {
    "scalar": ("_div_scalar", "_DivScalar"),
    "array": ("broadcast_div", "elemwise_div", "_div", "_Div"),
}
# A bool NDArray divides by a scalar from 1.7 (into int64, trapping on a 0 like the integer
# types); 1.6 rejects it (MXNetError "Unknown type enum 7").  bool / bool is MXNet's error.
BOOL_SCALAR_DIVISION = (1, 7)
# An empty integer NDArray divided by an integer array holding a 0 (broadcast_div of (0, 2)
# by (1, 2)): 1.3 dies with SIGFPE, and 1.4 aborts on an empty broadcast_div whatever the
# divisor; 1.5 cannot make zero-size NDArrays; from 1.6 they come with NumPy shapes
# (npx.set_np) and MXNet returns the empty result.
EMPTY_DIVIDEND_RETURNS = (1, 6)
# _div_scalar takes is_int from 1.7 (default true: the scalar is converted to the array's
# dtype); is_int=False divides in floating point, without the trap.  Before 1.7 the argument
# is ignored: it traps all the same.
DIV_SCALAR_IS_INT = (1, 7)

# From 1.7 gluon.Trainer._init_params hands a parameter to the kvstore with broadcast (init,
# then a pull into the weights) and _allreduce_grads sums gradients with pushpull; on a dist
# kvstore nothing orders a worker's pull of the initial weights before its own first push, so
# a Trainer whose kvstore is set up lazily in its first step() can pull the summed gradients
# as its weights (seen on rank 1 only; dist_sync with update_on_kvstore=False then trains on
# from them): 4 of 8 plain runs on 1.9.1, 1 of 8 on 1.7; with a worker's engine still busy at
# step() (tests/patches/test_trainer_kvstore_init.py) 18-20 of 20 trials on 1.7-1.9.  1.3-1.6
# init and pull, then push and pull: the same race, far rarer (0 of 20 trials on 1.3.1 and
# 1.6.0 in one run, 1 of 20 on 1.3.1 in another), so trainer_kvstore_init applies on every
# release; from this release the race is likely.
TRAINER_LAZY_KVSTORE_RACE = (1, 7)
# mxnet/kvstore*.py became mxnet/kvstore/ (KVStoreServer, base.create): patches/kvstore_server.py
KVSTORE_PACKAGE = (1, 7)

# Threads recording autograd at once on arrays they share race on every release ("The any
# container is empty ... AGInfo", heap corruption, segfaults; patches/autograd_threads.py).
AUTOGRAD_THREADS_RACE = (1, 3)

# gluon.utils.split_data(..., even_split=False) with a remainder: up to 1.6 the last slice
# takes all of it (11 rows in 4 slices: 2, 2, 2, 5); from 1.7 it is spread one row each over
# the first slices, as numpy.array_split does (3, 3, 3, 2).  mxcompat changes neither.
SPLIT_DATA_SPREADS_REMAINDER = (1, 7)
# split_data(..., even_split=False) with fewer rows than slices: 1.3 and 1.4 raise
# ValueError("Too many slices ..."); 1.5 and 1.6 return one slice per row (fewer slices); from
# 1.7 (SPLIT_DATA_SPREADS_REMAINDER) num_slice slices, the last ones empty for an mx.np array,
# while an NDArray fails in slice_axis (MXNetError "Invalid begin, end") -- along axis 0 only
# in 1.7: from 1.8 it is sliced with data[begin:end], which gives the empty slices.
SPLIT_DATA_FEWER_SLICES = (1, 5)
SPLIT_DATA_AXIS0_INDEXING = (1, 8)

# ONNX export.  MXNet's exporter is mxnet.contrib.onnx.mx2onnx from 1.3 and the package
# mxnet.onnx from 1.9 (contrib.onnx.export_model then only forwards to it, with a notice).
MX_ONNX_PACKAGE = (1, 9)
# create_onnx_graph_proto / export_model take opset_version from 1.8 (and translate by it);
# before, the translations are written for one opset and export_model stamps whatever the
# installed onnx's newest is.
ONNX_EXPORT_OPSET_ARG = (1, 8)
# 1.9 registers converters per opset (MXNetGraph.registry_[12], [13]); before, one dict.
ONNX_REGISTRY_BY_OPSET = (1, 9)
# (lowest, highest) opset each release's exporter writes correctly (onnx's checker accepts
# its graphs and onnxruntime matches MXNet), from the release on.  Measured with onnx 1.23.2
# and onnxruntime 1.32 on the model-zoo nets of tests/onnx/test_onnx.py.
ONNX_EXPORT_OPSETS = (
    ((1, 3), (8, 8)),
    ((1, 8), (9, 12)),
    ((1, 9), (12, 13)),
)

# to_torch's operators (read in src/operator of each release; the tests skip before them).
# contrib.BilinearResize2D takes align_corners from 1.7, default True: before, it has none and
# always aligns the corners (the same output).
BILINEAR_RESIZE_ALIGN_CORNERS = (1, 7)
# gather_nd adds the axis' size to an index before truncating it from 1.7 (a negative index
# counts from the end; -0.5 is the last row): before, -0.5 is row 0 and -1 reads outside.
GATHER_ND_WRAPS_NEGATIVE = (1, 7)
# topk's and argsort's dtype takes int64 from 1.6.
SORT_DTYPE_INT64 = (1, 6)


# The pip wheels' libmxnet.so asks for an executable stack (PT_GNU_STACK flags RWE) up to 1.6:
# readelf -lW of 1.3.1, 1.4.1, 1.5.1.post0 and 1.6.0 shows RWE, of 1.7.0.post2, 1.8.0.post0
# and 1.9.1 RW (likely assembly kernels linked in without a .note.GNU-stack: 1.8+ ship
# OpenBLAS as its own libopenblas.so.0).  Every other .so of every wheel's mxnet/ folder
# (libgfortran.so.3/.4, libquadmath.so.0, libopenblas.so.0, 1.6.0's MKL/oneDNN ones) is RW.
LIBMXNET_STACK_NOT_EXECUTABLE = (1, 7)

# --- glibc releases (patches/exec_stack/) ----------------------------------------------------

# dlopen refuses a library whose PT_GNU_STACK asks for an executable stack (or that has none,
# where the ABI's default is executable, as on x86-64) unless the stack already is: "cannot
# enable executable stack as shared object requires: Invalid argument" (glibc 2.41 NEWS; seen
# with Debian's 2.43 on the 1.3.1-1.6.0 wheels, Python 3.14: import mxnet fails in base.py).
GLIBC_DLOPEN_REFUSES_EXECSTACK = (2, 41)
# GLIBC_TUNABLES=glibc.rtld.execstack=2 (read at process start) lets dlopen make every
# thread's stack executable as before (glibc 2.42 NEWS; on 2.43 the 1.3.1 wheel then loads and
# [stack] is rwx in /proc/self/maps).
GLIBC_EXECSTACK_TUNABLE_ALLOWS = (2, 42)

# --- CUDA wheels and GPUs (mxcompat/cuda/) --------------------------------------------------

# The GPU architectures the CUDA wheels' libmxnet.so carries machine code for, read from its
# .nv_fatbin by mxcompat/cuda/fatbin.py and by cuobjdump --list-elf (the same list, 197
# cubins each), no PTX (cuobjdump --list-ptx: none): mxnet-cu117 1.9.1; the issue that asked
# for this read the same from mxnet-cu112 1.9.1, as its build config's MXNET_CUDA_ARCH says
# ("5.0;6.0;7.0;8.0;8.6").  Machine code for sm_XY runs on a GPU of the same major X and a
# minor >= Y (sm_86 on sm_89); a newer major (Hopper sm_90, Blackwell sm_100/sm_120) needs PTX.
GPU_WHEEL_ARCHS = {"1.9.1": ((5, 0), (6, 0), (7, 0), (8, 0), (8, 6))}
# The MXNet releases with CUDA 11 wheels (mxnet-cu11X), the only CUDA whose libraries NVIDIA
# publishes as pip packages (nvidia-*-cu11); 1.7 and older stop at cu102.
CUDA11_WHEELS = {
    "1.9.1": ("cu110", "cu111", "cu112", "cu113", "cu114", "cu115", "cu116", "cu117"),
    "1.9.0": ("cu110", "cu112"),
    "1.8.0.post0": ("cu110", "cu112"),
    "1.8.0": ("cu110",),
}
# MXNet's pointwise fusion compiles with the NVRTC it loads for --gpu-architecture=compute_XY
# of the device; NVRTC knows an architecture from the CUDA release that introduced it (CUDA
# 11.0 sm_80, 11.1 sm_86, 11.4 sm_87, 11.8 sm_89 and sm_90; nothing newer in 11.x).  Before
# 11.8, an Ada GPU (sm_89: RTX 40xx, L4, L40) fails with "invalid value for
# --gpu-architecture".  Architectures older than sm_80 are known to every NVRTC 11.
NVRTC_KNOWS_ARCH = {
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
}
# The pip NVRTC mxcompat install asks for: the first that knows sm_89 (nvidia-cuda-nvrtc-cu11
# 11.8.89 keeps the soname libnvrtc.so.11.2 the wheels link).
NVRTC_PIP_MIN = (11, 8)

# --- NumPy releases (MXNet will never release again: mxcompat is its NumPy support) --------

# NEP 50 (scalar promotion) and NEP 51 (scalar reprs such as "np.int64(3)") (patches/numpy2/).
NUMPY_2 = (2, 0)
# ndarray.tostring is gone, and np.dtype() refuses NDArray.dtype (a scalar class).
NUMPY_NO_TOSTRING = (2, 3)
# int()/float()/complex()/operator.index() of an array with ndim > 0 raise TypeError
# (deprecated in 1.25; NumPy 1 converted the one element).  Checked: 2.4.6 and 2.5.5 raise,
# 2.1.3 warns.
NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY = (2, 4)

# --- SciPy releases (mxnet.test_utils' chi-square tests call scipy.stats) ------------------

# Every release 1.3.1 ... 1.9.1 has mxnet.test_utils.chi_square_check (verify_generator calls
# it), imported by mxnet/__init__: test_utils binds `import scipy.stats as ss` (None without
# SciPy) and the check ends with ss.chisquare(f_obs=obs_freq, f_exp=expected_freq), its only
# chisquare call.  Its expected frequencies need not sum to the observed total: the buckets of
# gen_buckets_probs_with_ppf leave a distribution's tails out, and nsamples * probs is
# truncated to int32 counts (patches/scipy_chisquare.py).
MXNET_CHI_SQUARE_CHECK = (1, 3)
# From SciPy 1.7.0 chisquare (power_divergence) raises ValueError ("For each axis slice, the
# sum of the observed frequencies must agree with the sum of the expected frequencies to a
# relative tolerance of ...") where SciPy 1.6 and older computed the statistic from the
# frequencies as given.  Checked: 1.5.4 computes, 1.14.1 and 1.18.1 raise.
SCIPY_CHISQUARE_SUM_CHECK = (1, 7)
# chisquare(..., sum_check=False) turns that check off, from SciPy 1.15.0 (keyword-only).
SCIPY_CHISQUARE_SUM_CHECK_OPTION = (1, 15)

# --- Python releases (What's New of 3.14 and 3.15 read against MXNet 1.3.1 ... 1.9.1) -------

# multiprocessing's default start method on Linux is forkserver from Python 3.14 (spawn where
# no temporary folder is writable); before, fork (macOS: spawn from 3.8).  A DataLoader with
# num_workers > 0 then runs each worker in a fresh interpreter: an unguarded script (no
# `if __name__ == "__main__":`) fails ("An attempt has been made to start a new process
# before the current process has finished its bootstrapping phase", then ConnectionResetError
# on 3.14, multiprocessing's TimeoutError after 120 s on 3.15), and a transform lambda or an
# unpicklable dataset cannot be sent.  Seen on 3.14.10 and 3.15.2 (glibc 2.43) with 1.9.1 and
# 1.5.1; set_start_method("fork") trains as on 3.13 (patches/dataloader_start_method.py).
PYTHON_FORKSERVER_DEFAULT = (3, 14)

# tarfile's extract()/extractall() apply the 'data' filter by default from Python 3.14 (PEP 706;
# 3.12 and 3.13 warn that they will): absolute names, links leading out of the target and
# device files raise tarfile.FilterError, the archive's owner is not applied and group/other
# write bits are dropped.  MXNet's own tar extraction (gluon CIFAR10/CIFAR100 `_get_data`, every
# release; contrib.text's '.gz' branch, which none of its listed embeddings reaches) holds plain
# files: a CIFAR-shaped archive through CIFAR10._get_data gives the same arrays and file modes
# on 3.13, 3.14 and 3.15 (1.5.1, 1.7.0, 1.8.0, 1.9.1; only the owner differs when root
# extracts).  Users' own extraction scripts: scan rule MXC011.
PYTHON_TARFILE_DATA_FILTER = (3, 14)
# UTF-8 mode is the default from Python 3.15 (PEP 686): open() without an encoding reads UTF-8
# whatever the locale.  mx.image.ImageIter/ImageDetIter(path_imglist=...) and tools/im2rec.py
# read .lst files so, and im2rec writes them so (every release): a list written under a
# non-UTF-8 locale by an earlier Python, with non-ASCII image names, raises UnicodeDecodeError
# (seen with en_US.ISO-8859-1: 3.14 reads it, 3.15 raises; MXNet 1.9.1).
PYTHON_UTF8_MODE_DEFAULT = (3, 15)


def numpy_since(fact):
    """True when the imported numpy (never imports it) is at or after ``fact``; NumPy's own
    ``NumpyVersion`` reads its version string (dev and rc builds included)."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    try:
        return np.lib.NumpyVersion(np.__version__) >= "%d.%d.0" % fact
    except (AttributeError, ValueError):
        return False


def scipy_since(fact, version=None):
    """True when the imported scipy (never imports it), or ``version`` (a string), is at or
    after ``fact``; NumPy's ``NumpyVersion`` reads SciPy's version strings too (same scheme)."""
    if version is None:
        version = getattr(sys.modules.get("scipy"), "__version__", None)
    np = sys.modules.get("numpy")
    if version is None or np is None:
        return False
    try:
        return np.lib.NumpyVersion(version) >= "%d.%d.0" % fact
    except (AttributeError, ValueError):
        return False


def python_since(fact):
    """True when this Python is at or after ``fact`` (a Python release, e.g. ``(3, 14)``)."""
    return tuple(sys.version_info[: len(fact)]) >= tuple(fact)


def parse_version(text):
    """``'1.8.0.post0'`` → ``(1, 8, 0)``; ``'2.0.0b1'`` → ``(2, 0, 0)``; junk → ``None``.

    Installs are named mxnet, mxnet-cu112, mxnet-mkl…, so the package's own
    ``__version__`` is read, never the distribution name.  Hand-written rather than
    ``packaging.version`` (which the matrix and the pytest plugin use): this runs inside
    ``import mxnet``, where the release triple is all mxcompat compares, and importing
    ``packaging.version`` there costs 3-5 ms (measured with -X importtime, Python 3.7-3.13),
    a quarter of the 20 ms import budget.
    """
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def release(text):
    """The release ``text`` names: ``'1.5.1.post0'`` → ``'1.5.1'``; junk → ``None``.  A post
    release counts as its release everywhere (a version specifier, the supported table), so
    ``<1.5.1`` and ``>1.5.1`` mean what they say for 1.5.1.post0 too."""
    parsed = parse_version(text)
    return None if parsed is None else ".".join(str(part) for part in parsed)


# (text, parse_version(text)) of the mxnet version last read: since() asks at every
# conversion and bind, and parsing costs more than the comparison it serves.
_last_version = ("", None)


def mxnet_version():
    """The version of the *imported* mxnet (never imports it), or ``None``."""
    global _last_version
    mx = sys.modules.get("mxnet")
    if mx is None:
        return None
    text = getattr(mx, "__version__", "")
    seen = _last_version
    if seen[0] != text or seen[1] is None:
        seen = _last_version = (text, parse_version(text))
    return seen[1]


def is_supported(version):
    return version is not None and MIN_VERSION <= version[:2] < MAX_VERSION


def since(fact, version=None):
    """True when the imported mxnet (or ``version``) is at or after ``fact``."""
    version = version or mxnet_version()
    return version is not None and version[: len(fact)] >= fact


def build_features():
    """The imported mxnet's enabled build features, sorted (``mxnet.runtime``, 1.5+), or
    ``None`` before ``RUNTIME_FEATURES``.  ``mxnet.runtime`` is imported here because
    ``mxnet/__init__`` does not import it in 1.5."""
    if not since(RUNTIME_FEATURES):
        return None
    runtime = importlib.import_module("mxnet.runtime")
    return sorted(name for name, feature in runtime.Features().items() if feature.enabled)


@functools.lru_cache(maxsize=None)
def has_mkldnn():
    """Whether the imported mxnet is an MKLDNN (oneDNN) build.  Cached: a build never changes
    within a process, and this is asked at every bind that freezes a parameter."""
    features = build_features()
    if features is not None:
        return "MKLDNN" in features
    # Before mxnet.runtime: MKLDNN builds register their subgraph operators.
    return hasattr(sys.modules["mxnet"].sym._internal, "_sg_mkldnn_conv")


@functools.lru_cache(maxsize=None)
def int64_tensor_size():
    """Whether the imported mxnet's NDArray shapes go through the 64-bit C calls."""
    return since(INT64_TENSOR_SIZE_CALLS) and "INT64_TENSOR_SIZE" in build_features()


def onednn_enabled():
    """Whether the imported mxnet runs oneDNN kernels: an MKLDNN build not switched off with
    ``MXNET_MKLDNN_ENABLED=0`` (which MXNet reads from the environment, default on)."""
    return has_mkldnn() and os.environ.get("MXNET_MKLDNN_ENABLED", "1").strip() != "0"
