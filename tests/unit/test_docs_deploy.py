"""docs/deploy.md's PostgreSQL examples say what the server takes: the compose file's
command and the shell example parse with the real `agents serve --http` options, and
the store URL they build is one the settings accept."""

import argparse
import re
import shlex
from pathlib import Path

from cleveragents.config import Settings
from cleveragents.transports.http.main import add_http_arguments
from cleveragents.transports.serving import add_server_arguments

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_server_arguments(parser)
    add_http_arguments(parser)
    parser.add_argument("--http", action="store_true")
    return parser


def test_the_compose_files_command_is_one_the_server_takes():
    compose = PAGE.split("### A compose file", 1)[1]
    yaml = re.search(r"```yaml\n(.*?)```", compose, re.S).group(1)
    command = re.search(r"exec (agents serve [^']*)'", yaml).group(1)
    args = serve_parser().parse_args(shlex.split(command)[2:])
    assert args.http and args.host == "0.0.0.0" and args.port == 8000
    url = re.search(r'CLEVERAGENTS_STORE="([^"]*)"', yaml).group(1).replace("$$(cat /run/secrets/db_password)", "pw")
    assert Settings(store=url).store == "postgresql://agents:pw@db:5432/agents"
    assert "postgres:" in yaml and "pg_isready" in yaml


def test_the_shell_example_names_the_store_as_the_server_reads_it():
    section = PAGE.split("### How to run it", 1)[1]
    shell = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    url = re.search(r"CLEVERAGENTS_STORE='([^']*)'", shell).group(1)
    assert Settings.from_env(store=url).store == url
    line = next(line for line in shell.splitlines() if line.startswith("agents serve"))
    serve_parser().parse_args(shlex.split(line.split("#")[0])[2:] + ["--store", url])
