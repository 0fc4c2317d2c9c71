"""docs/ops.md is generated from the plugin registry and the conformance tests' TESTED_DTYPES."""

import textwrap

import pytest

from tf2ir.tools import optable


def test_checked_in_page_matches_the_registry():
    diff = optable.check(optable.DEFAULT_OUTPUT, optable.generate())
    assert not diff, ("docs/ops.md is out of date; regenerate it with "
                      f"`{optable.REGENERATE}`:\n" + "\n".join(diff[:40]))


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_reads_tested_dtypes_from_module_level_literals(tmp_path):
    _write(tmp_path / "test_a.py", """
        import pytest
        TESTED_DTYPES = {"Abs": ("float32", "int32"), "Neg": ("float64",)}
        def test_nothing():
            TESTED_DTYPES = {"Ignored": ("float32",)}   # not module level
        """)
    _write(tmp_path / "test_b.py", """
        from typing import Dict, Tuple
        TESTED_DTYPES: Dict[str, Tuple[str, ...]] = {"Abs": ("int64", "float32")}
        """)
    _write(tmp_path / "test_none.py", "X = 1\n")
    _write(tmp_path / "helper.py", 'TESTED_DTYPES = {"NotATest": ("float32",)}\n')
    tested = optable.collect_tested_dtypes(str(tmp_path))
    assert tested == {"Abs": {"float32", "int32", "int64"}, "Neg": {"float64"}}
    assert optable.sort_dtypes(tested["Abs"]) == ["float32", "int32", "int64"]


@pytest.mark.parametrize("value", ['{"Abs": UNKNOWN}', '{"Abs": make()}', '{"Abs": "float32"}',
                                   '[("Abs", ("f",))]'])
def test_rejects_tested_dtypes_that_are_not_literal_tuples(tmp_path, value):
    path = _write(tmp_path / "test_bad.py", f"DTYPES = ('float32',)\nTESTED_DTYPES = {value}\n")
    with pytest.raises(optable.TestedDtypesError, match="test_bad.py:2"):
        optable.read_tested_dtypes(path)


def test_names_of_module_literals_and_joined_tuples_are_read(tmp_path):
    path = _write(tmp_path / "test_names.py", "FLOATS = ('float32', 'float64')\n"
                  "TESTED_DTYPES = {'Abs': FLOATS + ('int32',), 'Neg': FLOATS}\n")
    assert optable.read_tested_dtypes(path) == {"Abs": {"float32", "float64", "int32"},
                                                "Neg": {"float32", "float64"}}


def test_generated_page_lists_registry_dtypes_and_fusion_passes():
    text = optable.generate({"Relu": {"float32", "float16"}, "NoSuchOp": {"int32"}})
    from tf2ir.plugins.manager import PluginManager
    manager = PluginManager(use_env=False)
    assert f"| Relu | {manager.registry['Relu'].ir_type} | builtin_nn | float16, float32 |" in text
    assert "| Conv2D | Conv2D | builtin_conv | — |" in text
    assert "Tested but mapped by no built-in plugin: NoSuchOp (int32)." in text
    assert "| swish | on | builtin_fusion |" in text
    assert "SwishFusion → Swish" in text and "| SwishFusion |" not in text
    assert optable.REGENERATE in text.splitlines()[2]


def test_check_exits_1_with_a_diff_when_the_page_differs(tmp_path, capsys):
    page = tmp_path / "ops.md"
    assert optable.main(["--check", "-o", str(page)]) == 1          # missing
    assert optable.main(["-o", str(page)]) == 0
    assert optable.main(["--check", "-o", str(page)]) == 0
    page.write_text(page.read_text().replace("| Conv2D |", "| Conv3000 |"))
    capsys.readouterr()
    assert optable.main(["--check", "-o", str(page)]) == 1
    err = capsys.readouterr().err
    assert "-| Conv3000 |" in err and "+| Conv2D |" in err and "out of date" in err


def test_tflite_modes_are_read_from_the_tflite_conformance_modules(tmp_path):
    _write(tmp_path / "test_tflite_a.py", """
        FLOAT = ("float",)
        TFLITE_TESTED = {"CONV_2D": FLOAT + ("int8",), "MEAN": ("float",)}
        TESTED_DTYPES = {"Conv2D": ("float32",)}
        """)
    _write(tmp_path / "test_tflite_b.py", 'TFLITE_TESTED = {"CONV_2D": ("dynamic", "float")}\n')
    _write(tmp_path / "test_other.py", 'TFLITE_TESTED = {"ADD": ("float",)}\n')   # not a TFLite module
    tested = optable.collect_tflite_tested(str(tmp_path))
    assert tested == {"CONV_2D": {"float", "int8", "dynamic"}, "MEAN": {"float"}}
    assert optable.sort_modes(tested["CONV_2D"] | {"float16", "int16", "zz"}) == \
        ["float", "dynamic", "int8", "int16", "float16", "zz"]
    assert optable.collect_tested_dtypes(str(tmp_path)) == {"Conv2D": {"float32"}}
    bad = _write(tmp_path / "test_tflite_bad.py", 'TFLITE_TESTED = {"ADD": "float"}\n')
    with pytest.raises(optable.TestedDtypesError,
                       match=r"test_tflite_bad.py:1: TFLITE_TESTED\['ADD'\] must be a tuple of mode"):
        optable.read_tested_dtypes(bad, optable.TFLITE_TESTED)


def test_tflite_mappings_have_their_own_section_and_never_a_tf_row():
    """TFLITE registrations (keyed "TFLITE:CONV_2D" in the manager) are listed by their TFLite
    names under their own heading with the tested modes, and not as TF op types."""
    from tf2ir.plugins.manager import PluginManager
    manager = PluginManager(use_env=False)
    lite = {key.split(":", 1)[1]: reg for key, reg in manager.registry.items()
            if key.startswith("TFLITE:")}
    assert {"CONV_2D", "MEAN"} <= set(lite)
    text = optable.generate({"Conv2D": {"float32"}}, manager,
                            {"CONV_2D": {"int8", "float"}, "NO_SUCH_OP": {"float"}})
    tf_part, _, lite_part = text.partition("\n## TensorFlow Lite operators\n")
    assert lite_part and "TFLITE:" not in text
    conv = lite["CONV_2D"]
    assert f"| CONV_2D | {conv.ir_type} | {conv.plugin} | float, int8 |" in lite_part
    assert f"| MEAN | {lite['MEAN'].ir_type} | {lite['MEAN'].plugin} | — |" in lite_part
    assert f"**{len(lite)} TFLite op types**" in lite_part
    assert "Tested but mapped by no built-in TFLITE plugin: NO_SUCH_OP (float)." in lite_part
    assert "| CONV_2D |" not in tf_part and "| MEAN |" not in tf_part
    assert "| Conv2D | Conv2D | builtin_conv | float32 |" in tf_part
    tf_rows = sum(1 for line in tf_part.split("## Refused")[0].split("## Scope")[0].splitlines()
                  if line.startswith("| ") and not line.startswith("| TF op type"))
    tf_keys = [k for k, r in manager.registry.items() if ":" not in k and not r.fusion
               and r.ir_type not in {p for p, proto in manager.prototypes.items() if proto.refused}]
    assert f"**{tf_rows} TF op types**" in tf_part and tf_rows <= len(tf_keys)
