"""Trial 42 (a tyre-tread inspection audit by a new user): what it found, fixed."""

import subprocess
import sys


def _child(code):
    setup = "import atexit, os, signal\nfrom lbee.service.workers import _exit_cleanly\n"
    setup += "signal.signal(signal.SIGTERM, _exit_cleanly)\n"
    return subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True, timeout=60)


def test_a_worker_stopped_twice_exits_without_a_traceback():
    """A server stopped as a process group (systemd's KillMode) logged "Exception ignored in atexit callback ...
    SystemExit: 143": the worker's second SIGTERM, from the server, came while it was exiting from the first."""
    first = _child("os.kill(os.getpid(), signal.SIGTERM)\nimport time\ntime.sleep(5)")
    assert first.returncode == 143 and first.stderr == ""  # a normal exit, finalizers run
    second = _child("atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))\nraise SystemExit(143)")
    assert second.returncode == 143, second.stderr
    assert "Exception ignored" not in second.stderr and "SystemExit" not in second.stderr, second.stderr
