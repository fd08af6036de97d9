"""What a measurement ran on: package versions and the device, for baselines and reports."""

from __future__ import annotations

import importlib.metadata
import platform

import torch


def versions() -> dict[str, str]:
    """Installed versions of flashcheck, torch and triton ("absent" when not installed)."""
    found = {}
    for package in ("flashcheck", "torch", "triton"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


def device_name(device) -> str:
    """A person-readable name of ``device``: the GPU's name, or the CPU running Triton's interpreter."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    processor = platform.processor() or platform.machine() or "unknown"
    return f"{processor} CPU (Triton interpreter)"
