"""Only the compiled extension lives here; metadata is in pyproject.toml."""

import glob
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py


class build_py_with_pth(build_py):
    """Also put src/dpfast-patch.pth at the top of the wheel (site-packages): the opt-in
    DPFAST_PATCH hook of the drop-in backends (src/_dpfast_patch.py)."""

    def run(self):
        super().run()
        self.copy_file(
            "src/dpfast-patch.pth", f"{self.build_lib}/dpfast-patch.pth", preserve_mode=0
        )


# Every C file of the core; sorted so that builds are reproducible.
CSRC = sorted(glob.glob("csrc/*.c"))

if sys.platform == "win32":
    compile_args = ["/O2"]
    libraries = ["bcrypt"]
else:
    # -O3 lets the compiler unroll the ChaCha rounds; no -march: a wheel must run on
    # baseline CPUs (wider SIMD is chosen at run time in csrc/chacha.c).  The grid,
    # selection and sparse-vector kernels prove their results for IEEE double arithmetic
    # as written: no fused multiply-adds (gcc contracts by default on arm64), and never
    # -ffast-math.
    compile_args = ["-O3", "-fno-strict-aliasing", "-ffp-contract=off"]
    # Release builds carry no debug information (5.3 MB -> under 1 MB); DPFAST_DEBUG=1
    # keeps it for gdb and the sanitizer builds.
    compile_args.append("-g" if os.environ.get("DPFAST_DEBUG") else "-g0")
    libraries = ["m"]

ext = Extension(
    "dpfast._core",
    sources=["src/dpfast/_core.pyx"] + CSRC,
    include_dirs=["csrc/include", numpy.get_include()],
    # Built with numpy 2.x headers but only for the C API of numpy 1.25+, so one wheel
    # runs on every numpy >= 1.26 (pyproject's floor) instead of requiring the numpy it
    # was built with.
    define_macros=[
        ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
        ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
    ],
    extra_compile_args=compile_args,
    libraries=libraries,
)

# freethreading_compatible (Cython >= 3.1): the module declares that it runs without the
# GIL on a free-threaded CPython (3.13t/3.14t) instead of re-enabling it at import.  Every
# module-level state and generator lock is audited for that in docs/threads.md.
setup(
    cmdclass={"build_py": build_py_with_pth},
    ext_modules=cythonize(
        [ext],
        language_level=3,
        compiler_directives={"embedsignature": True, "freethreading_compatible": True},
    ),
)
