import subprocess
import sys


def test_the_serving_path_never_imports_the_simulator():
    code = (
        "import sys, inference.world.engine, inference.world.state, inference.world.model,"
        " inference.world.text;"
        "print(any(m.startswith('inference.training.simulator') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_inference_core_does_not_import_django():
    code = "import sys, inference.world.engine; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_narrative_module_stays_off_django_and_the_simulator():
    code = (
        "import sys, inference.narrative.narrator, inference.narrative.grammar;"
        "print(any(m == 'django' or m.startswith('inference.training.simulator')"
        " for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
