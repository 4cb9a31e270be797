"""Shared setup of the launcher's tests: the checkout, the launcher on sys.path, the debug
gadget binary that `cargo test` built, and what to do when something a test needs is
missing (skip on a developer's machine, fail in CI, where everything must be there)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[3]
LAUNCHER = ROOT / "launcher" / "ray"
if str(LAUNCHER) not in sys.path:
    sys.path.insert(0, str(LAUNCHER))


def in_ci() -> bool:
    """Whether this is CI (.ci/run sets CI=true), where nothing may be skipped."""
    return os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> NoReturn:
    """Skips the test with `reason`, or fails it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: this test must run in CI)")
    pytest.skip(reason)


def gadget_path() -> Path:
    """The gadget binary under test: $GADGET_BIN, else the debug build of this checkout
    ($CARGO_TARGET_DIR or target/, then debug/gadget)."""
    env = os.environ.get("GADGET_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return target / "debug" / "gadget"


@pytest.fixture(scope="session")
def root() -> Path:
    """The checkout."""
    return ROOT


@pytest.fixture(scope="session")
def gadget() -> Path:
    """The debug gadget binary `cargo test` built (make test builds it before these tests)."""
    path = gadget_path()
    if not path.is_file():
        unavailable(f"no gadget binary at {path}: build it with `cargo build -p gadget-cli` (make test does)")
    return path
