"""The Python 3.14/3.15 changes MXNet's own code meets, and why mxcompat leaves them to Python:
MXNet's tar extraction under the 'data' filter (``PYTHON_TARFILE_DATA_FILTER``) and its .lst
readers in UTF-8 mode (``PYTHON_UTF8_MODE_DEFAULT``), against real MXNet."""

import hashlib
import os
import stat
import sys
import tarfile
import warnings

import numpy as np
import pytest

from mxcompat._core import facts
from tests.support.processes import run_python

NAMES = ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]


def _sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def _cifar_archive(folder):
    """An archive laid out as the one CIFAR10 downloads (its batches at the top), three
    records a batch, each member owned by another user, as an archive made elsewhere is."""
    src = folder.mkdir("src")
    rng = np.random.RandomState(0)
    records = {}
    for name in NAMES:
        rows = rng.randint(0, 256, size=(3, 3073)).astype(np.uint8)
        rows[:, 0] = [1, 2, 3]
        records[name] = rows
        src.join(name).write_binary(rows.tobytes())
    root = folder.mkdir("root")
    archive = str(root.join("cifar-10-binary.tar.gz"))
    with tarfile.open(archive, "w:gz") as tar:
        for name in NAMES:
            info = tar.gettarinfo(str(src.join(name)), arcname=name)
            info.uid, info.gid, info.uname, info.gname, info.mode = 1234, 1234, "kr", "kr", 0o644
            with open(str(src.join(name)), "rb") as f:
                tar.addfile(info, f)
    return str(src), str(root), archive, records


def test_cifar10_extracts_the_same_under_pythons_data_filter(tmpdir):
    # MXNet's own CIFAR10._get_data, its download skipped: the archive is already there with
    # the hashes the subclass names, so _get_data goes straight to tar.extractall.
    from mxnet.gluon.data import dataset
    from mxnet.gluon.data.vision import datasets

    src, root, archive, records = _cifar_archive(tmpdir)

    class LocalCIFAR10(datasets.CIFAR10):
        def __init__(self, root, train):
            self._train = train
            self._archive_file = (os.path.basename(archive), _sha1(archive))
            files = [(n, _sha1(os.path.join(src, n))) for n in NAMES]
            self._train_data, self._test_data = files[:5], files[5:]
            self._namespace = "cifar10"
            dataset._DownloadedDataset.__init__(self, root, None)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train = LocalCIFAR10(root, True)
    test = LocalCIFAR10(root, False)

    expected = np.concatenate([records[n] for n in NAMES[:5]])
    assert len(train) == 15 and len(test) == 3
    images = np.stack([train[i][0].asnumpy() for i in range(15)])
    assert (images == expected[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)).all()
    assert [int(train[i][1]) for i in range(15)] == expected[:, 0].tolist()
    for name in NAMES:
        assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o644
    # 3.12 and 3.13 announce the filter (the backports of 3.8-3.11 do not); 3.14 applies it.
    announced = [w for w in caught if "filter extracted tar" in str(w.message)]
    assert bool(announced) == ((3, 12) <= sys.version_info[:2] < facts.PYTHON_TARFILE_DATA_FILTER)


LST = """
    import sys, mxcompat, mxnet as mx
    try:
        it = mx.image.ImageIter(batch_size=1, data_shape=(3, 8, 8), path_imglist=sys.argv[1],
                                path_root='.')
        print("read", ascii([v[1] for v in it.imglist.values()]))
    except UnicodeDecodeError as e:
        print("UnicodeDecodeError", e.reason)
"""


LOUD = "UnicodeDecodeError invalid continuation byte"


def _read_lst(path, env=None):
    proc = run_python(
        "import sys; sys.argv[1:] = [%r]\n" % path + LST.replace("\n    ", "\n"), env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _latin1_lst(tmpdir):
    # What tools/im2rec.py's write_list wrote under an ISO-8859-1 locale before Python 3.15.
    path = tmpdir.join("photos.lst")
    path.write_binary("0\t1.000000\tcafé/1.jpg\n".encode("latin-1"))
    return path


def test_a_lst_written_in_another_encoding_is_a_loud_error_in_utf8_mode(tmpdir):
    # UTF-8 mode (Python 3.15's default, PYTHONUTF8=1 before) makes MXNet's ImageIter read the
    # list as UTF-8: a Latin-1 list raises, mxcompat does not guess another encoding.
    path = _latin1_lst(tmpdir)
    assert _read_lst(str(path), env={"PYTHONUTF8": "1"}) == LOUD
    # The fix the trap row gives: convert the list once, then every Python reads it.
    path.write_binary(path.read_binary().decode("latin-1").encode("utf-8"))
    assert _read_lst(str(path), env={"PYTHONUTF8": "1"}) == "read ['caf\\xe9/1.jpg']"


@pytest.mark.skipif(
    not facts.python_since(facts.PYTHON_UTF8_MODE_DEFAULT),
    reason="UTF-8 mode is the default from Python 3.15 only (PEP 686)",
)
def test_utf8_mode_is_the_default_from_python_3_15(tmpdir):
    path = _latin1_lst(tmpdir)
    # No PYTHONUTF8, the machine's own locale: UTF-8 all the same.
    assert _read_lst(str(path), env={"PYTHONUTF8": ""}) == LOUD
