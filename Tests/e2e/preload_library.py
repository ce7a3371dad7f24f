"""The LD_PRELOAD libraries the end-to-end tests build from C (the emulated camera, the fault
injectors): each built by its script the first time a test asks for it, once per process."""

import subprocess
import threading
from pathlib import Path


class PreloadLibrary:
    def __init__(self, build_script, path):
        """`build_script` is run with bash and the library's directory; it makes `path`."""
        self.build_script = Path(build_script)
        self.path = str(path)
        self._lock = threading.Lock()
        self._built = False

    def build(self):
        """Builds the library the first time it is called; returns its path."""
        with self._lock:
            if not self._built:
                result = subprocess.run(["bash", str(self.build_script), str(Path(self.path).parent)],
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    raise RuntimeError(f"building {Path(self.path).name} failed:\n" + result.stdout + result.stderr)
                self._built = True
        return self.path
