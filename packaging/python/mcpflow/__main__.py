"""The mcpflow console script: runs the binary bundled in this package.

On POSIX the binary replaces this process (os.execv): no Python process
stays between the client and mcpflow, and stdin, stdout (the MCP protocol),
stderr and signals reach mcpflow directly. On Windows, which has no exec,
the binary runs as a child with the same standard handles, and its exit
code is this process's.
"""

import os
import sys


def binary():
    name = "mcpflow.exe" if sys.platform == "win32" else "mcpflow"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)


def main():
    path = binary()
    if not os.path.isfile(path):
        sys.stderr.write("mcpflow: the binary %s is missing from this install\n" % path)
        return 1
    argv = [path] + sys.argv[1:]
    if sys.platform == "win32":
        import subprocess

        child = subprocess.Popen(argv)
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:
                # The console sent Ctrl-C to mcpflow too: wait for it to stop.
                pass
        # An NTSTATUS such as 0xC000013A, as a signed int for sys.exit.
        return code - (1 << 32) if code >= 1 << 31 else code
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)  # an installer that dropped the mode
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays
    # ignored across exec: give mcpflow the defaults.
    import signal

    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execv(path, argv)


if __name__ == "__main__":
    sys.exit(main())
