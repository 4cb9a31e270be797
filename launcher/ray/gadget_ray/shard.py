"""What runs on a node: one shard's `gadget run`, in a folder of its own.

`ShardRunner` becomes a Ray actor (launch.py), one per shard, placed on its node before the
start is agreed: `prepare` writes the shipped binary, config and files into a fresh
temporary folder, `run` runs `gadget run ... --shard I/N --start-at T` there and returns how it
ended with its results file's bytes, `stop` asks a running `gadget` to stop (SIGTERM: it
writes its results so far, marked partial), `cleanup` removes the folder.

This module uses the standard library only and is shipped to the nodes by value (launch.py
registers it with Ray's pickler), so the nodes need Ray and Python, not Gadget's sources.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

#: How much of a shard's standard output and error comes back (the end of each).
OUTPUT_TAIL_BYTES = 64 * 1024

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel send `gadget` SIGTERM when the thread that started
    it dies (the actor's worker was killed), so no shard outlives its actor; None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork, not in the child

    def set_death_signal() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return set_death_signal


def _tail(data: bytes) -> str:
    """The end of a process's output, as text."""
    return data[-OUTPUT_TAIL_BYTES:].decode("utf-8", errors="replace")


def _safe_name(name: str) -> str:
    """A shipped file's name inside the shard's folder: a plain file name, nothing else."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"{name!r} is not a plain file name")
    return name


class ShardRunner:
    """One shard of a launch, on the node Ray placed it on."""

    def __init__(self, index: int, count: int) -> None:
        self.index = index
        self.count = count
        self.folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def where(self) -> dict[str, Any]:
        """The node this shard runs on: Ray's node id, its address, its host name."""
        import ray  # on the node, inside a Ray worker

        context = ray.get_runtime_context()
        return {
            "node_id": context.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
        }

    def prepare(
        self, binary: bytes, config_name: str, config: bytes, files: Sequence[tuple[str, bytes]]
    ) -> dict[str, Any]:
        """Writes the binary (executable), the config and the shipped files into a fresh
        temporary folder on this node; returns where the shard runs (`where`) and the folder."""
        folder = Path(tempfile.mkdtemp(prefix=f"gadget-ray-shard{self.index}-"))
        self.folder = folder
        written: set[str] = set()
        for name, data in [("gadget", binary), (config_name, config), *files]:
            name = _safe_name(name)
            if name in written:
                raise ValueError(f"two shipped files are named {name}; rename one")
            written.add(name)
            (folder / name).write_bytes(data)
        (folder / "gadget").chmod(0o755)
        return {**self.where(), "folder": str(folder)}

    def clock(self) -> float:
        """This node's wall clock, Unix seconds (the launcher compares it with its own)."""
        return time.time()

    def run(self, argv: Sequence[str], results: str) -> dict[str, Any]:
        """Runs `gadget ARGV` in the shard's folder until it ends; returns its exit status,
        the bytes of its results file `results` (when it wrote one, partial or not), the end
        of its standard output and error, and how long it ran."""
        if self.folder is None:
            raise RuntimeError("run before prepare: the shard has no binary")
        command = [str(self.folder / "gadget"), *argv]
        began = time.monotonic()
        with self._lock:
            if self._stopped:
                return {
                    "exit_code": None,
                    "results": None,
                    "stdout": "",
                    "stderr": "",
                    "seconds": 0.0,
                    "error": "stopped before it started",
                }
            self._process = subprocess.Popen(
                command,
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=_die_with_parent(),
            )
        out, err = self._process.communicate()
        seconds = time.monotonic() - began
        path = self.folder / results
        data = path.read_bytes() if path.is_file() else None
        return {
            "exit_code": self._process.returncode,
            "results": data,
            "stdout": _tail(out),
            "stderr": _tail(err),
            "seconds": seconds,
            "error": None,
        }

    def stop(self) -> bool:
        """Asks the shard's `gadget` to stop as Ctrl-C would (SIGTERM): it ends its run,
        writes its results so far marked partial, and `run` returns them. True when a
        `gadget` was running."""
        with self._lock:
            self._stopped = True
            process = self._process
            if process is None or process.poll() is not None:
                return False
            process.send_signal(signal.SIGTERM)
            return True

    def cleanup(self) -> None:
        """Removes the shard's folder from the node."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
