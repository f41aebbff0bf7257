"""`lnk model serve`: a local OpenAI-compatible server for chat and embeddings, from what is installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from link_plugin.errors import LinkError
from link_plugin.files import save_toml
from lnk.commands.common import err, layout, out, say
from lnk.machine import load_machine
from lnk.models import answers

app = typer.Typer(help="Models on this machine.", no_args_is_help=True)

INSTALL = (
    "No local model server is installed. Install one of:\n"
    "  Ollama      curl -fsSL https://ollama.com/install.sh | sh   (then: ollama pull qwen3-embedding)\n"
    "  llama.cpp   its llama-server (https://github.com/ggml-org/llama.cpp), with a .gguf model file\n"
    "then run `lnk model serve` again."
)


def _command(port: int, model_file: Path | None) -> tuple[str, list[str], dict[str, str]]:
    """Which server runs here: Ollama when installed, else llama.cpp's llama-server with a model file."""
    ollama = shutil.which("ollama")
    if ollama is not None:
        return "Ollama", [ollama, "serve"], {"OLLAMA_HOST": f"127.0.0.1:{port}"}
    llama = shutil.which("llama-server")
    if llama is not None:
        if model_file is None:
            raise LinkError("llama.cpp's llama-server needs a model file.", "lnk model serve --model-file MODEL.gguf")
        argv = [llama, "--host", "127.0.0.1", "--port", str(port), "-m", str(model_file), "--embeddings"]
        return "llama.cpp", argv, {}
    raise LinkError(INSTALL)


@app.command()
def serve(
    port: Annotated[int, typer.Option("--port", help="The loopback port to serve on.")] = 11434,
    model_file: Annotated[Path | None, typer.Option("--model-file", help="The .gguf model llama.cpp serves.")] = None,
) -> None:
    """Serve chat and embeddings on this machine's loopback, and make it the machine's local model server."""
    url = f"http://127.0.0.1:{port}/v1"
    machine = load_machine(layout())
    save_toml(layout().machine, machine.model_copy(update={"model_server": url}))
    if answers(url):
        out.print(url)
        say(f"A model server already answers at {url}; agents with --model local/<name> use it.")
        return
    name, argv, env = _command(port, model_file)
    process = subprocess.Popen(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    try:
        with err.status(f"Starting {name}..."):
            deadline = time.monotonic() + 60
            while not answers(url):
                if process.poll() is not None:
                    raise LinkError(f"{name} ended (exit {process.returncode}) before it answered at {url}.")
                if time.monotonic() > deadline:
                    raise LinkError(f"{name} didn't answer at {url} within 60 s.")
                time.sleep(0.2)
        out.print(url)
        say(f"{name} serves at {url} until Ctrl-C; agents with --model local/<name> use it.")
        sys.exit(process.wait())
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)
        process.wait()
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait()
