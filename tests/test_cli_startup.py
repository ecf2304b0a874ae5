import functools
import subprocess
import sys


@functools.cache
def modules_after_help() -> tuple[str, ...]:
    """Every module loaded in a fresh interpreter once `bench --help` has run (one subprocess for both tests)."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from bench.cli import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return tuple(out.stdout.split())


def test_help_does_not_import_heavy_modules():
    heavy = [m for m in ('torch', 'transformers', 'pycocoevalcap', 'matplotlib', 'pandas', 'systems',
                         'systems.backbone', 'bench.report', 'bench.runs', 'bench.scoring', 'bench.data',
                         'bench.launch') if m in modules_after_help()]
    assert heavy == [], f"bench --help imported: {','.join(heavy)}"


#: what `bench --help` may import of the project: the version, the command modules, the contract, the device help
#: and the terminal escaping every printing helper uses (standard library and bench.api.text only; rich lazily)
STARTUP = ("bench", "bench.version", "bench.cli", "bench.api", "bench.env", "bench.env.device", "bench.env.term_escape",
           "bench.env.help_summaries")  # help_summaries: the --help list itself (stdlib only)


def test_help_imports_only_the_command_modules_and_the_contract():
    loaded = [m for m in modules_after_help() if m.split(".")[0] in ("bench", "systems")]
    assert "bench.cli.common" in loaded and "bench.cli.run" in loaded
    extra = [m for m in loaded if m not in STARTUP and not m.startswith(("bench.cli.", "bench.api."))]
    assert extra == [], f"bench --help imported {extra}: import them inside the command that needs them"


def test_ls_systems_lists_without_importing_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from bench.cli import app\n"
        "r = CliRunner().invoke(app, ['ls', 'systems'])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert 'copy_source' in r.output\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_system_gets_did_you_mean():
    code = (
        "from typer.testing import CliRunner\n"
        "from bench.cli import app\n"
        "r = CliRunner().invoke(app, ['run', '--system', 'copy_sourse', '--task', 'quora'])\n"
        "print(r.exit_code); print(r.output)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == "2"
    assert "Did you mean 'copy_source'?" in out.stdout
