"""Paths and helpers shared by the Python tests (run by ctest with PYTHONPATH at the built package)."""
import json
import os
import subprocess

SOURCE = os.environ.get("SMOLVLM_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY = os.environ.get("SMOLVLM_BINARY", os.path.join(SOURCE, "build", "smolvlm"))
TINY = os.path.join(SOURCE, "tests", "data", "models", "smolvlm-tiny")
LLAMA = os.path.join(SOURCE, "tests", "data", "models", "llama-tiny")
FLOWER = os.path.join(SOURCE, "examples", "flower.jpg")
IMAGES = os.path.join(SOURCE, "tests", "data", "image")
CORRUPT = os.path.join(IMAGES, "corrupt")


def cli(*args, check=True):
    """Runs the smolvlm CLI; returns the CompletedProcess (text mode)."""
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"smolvlm {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def cli_json(*args):
    return json.loads(cli(*args).stdout)
