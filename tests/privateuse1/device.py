"""Build (once, cached) and register the "kbdev" PrivateUse1 test device from kbdev.cpp."""

from __future__ import annotations

import functools
import types
from pathlib import Path

import torch
from torch.utils import cpp_extension

NAME = "kbdev"
SOURCE = Path(__file__).with_name("kbdev.cpp")


@functools.cache
def load() -> str:
    """The device's name, after building the library (cached in torch's extension dir) and registering it."""
    # is_python_module=False: a plain shared library whose static registrations run on load; no pybind11 to compile.
    cpp_extension.load(name="kb_test_kbdev", sources=[str(SOURCE)], is_python_module=False, verbose=False)
    if torch._C._get_privateuse1_backend_name() != NAME:
        torch.utils.rename_privateuse1_backend(NAME)
        module = types.ModuleType(f"torch.{NAME}")
        module.is_available = lambda: True
        module.device_count = lambda: 1
        module.current_device = lambda: 0
        module._is_in_bad_fork = lambda: False
        torch._register_device_module(NAME, module)
        torch.utils.generate_methods_for_privateuse1_backend()
    return NAME
