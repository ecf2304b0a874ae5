import subprocess
import sys


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from bench.cli import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = [m for m in ('torch', 'transformers', 'pycocoevalcap', 'matplotlib', 'systems.backbone') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"bench --help imported: {out.stdout.strip()}"


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
