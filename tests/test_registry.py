import pytest

from bench.api.registry import Registry, RegistryError


def test_lazy_entry_is_imported_on_first_get_only():
    reg: Registry = Registry("thing")
    reg.register("dumps", "json:dumps")
    import json

    assert reg.get("dumps") is json.dumps
    assert "dumps" in reg and reg.names() == ["dumps"]


def test_duplicate_name_is_an_error():
    reg: Registry = Registry("system")
    reg.register("mist_unilm", "json:dumps")
    with pytest.raises(RegistryError, match="Duplicate system 'mist_unilm'"):
        reg.register("mist_unilm", "json:loads")


def test_unknown_name_suggests_close_match():
    reg: Registry = Registry("system")
    reg.register("mist_unilm", "json:dumps")
    reg.register("encoder_bert", "json:loads")
    with pytest.raises(RegistryError) as info:
        reg.get("mist_unlim")
    assert str(info.value).startswith("Unknown system 'mist_unlim'. Did you mean 'mist_unilm'?")


def test_unknown_name_without_close_match_lists_known():
    reg: Registry = Registry("task")
    reg.register("xsum", "json:dumps")
    with pytest.raises(RegistryError) as info:
        reg.get("zzzzzz")
    assert "Did you mean" not in str(info.value) and "Known tasks: xsum" in str(info.value)


def test_bad_lazy_reference_rejected():
    with pytest.raises(ValueError, match="module:attr"):
        Registry("recipe").register("x", "json.dumps")


def test_decorator_registers_object():
    reg: Registry = Registry("recipe")

    @reg.decorator("double", tasks="any")
    def double(x: int) -> int:
        return 2 * x

    assert reg.get("double")(2) == 4 and reg.meta("double") == {"origin": "built-in", "tasks": "any"}


def test_project_registries_have_no_duplicates_and_resolve():
    from systems import SYSTEMS

    assert "copy_source" in SYSTEMS and "lead1" in SYSTEMS
    for name in SYSTEMS.names():
        assert callable(SYSTEMS.get(name)), name
