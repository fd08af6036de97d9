"""A fuzz worker's compile focus (flashcheck.engine.focus): one compile class at first, one more
whenever compiling has taken at most its share of the case time and the classes in use are warm,
or, for an implementation that names its compile key, when they do not warm."""
from __future__ import annotations

import pytest

import dataclasses

from flashcheck.cases import compile_classes
from flashcheck.cases.case import LAYOUTS
from flashcheck.cases.sizes import GPU, INTERPRETER, with_focus_seed
from flashcheck.engine.focus import COLD_CASES_TO_WIDEN, WideningFocus


def test_a_worker_starts_in_one_class():
    focus = WideningFocus(GPU)
    assert focus.classes == 1 and focus.sizes().focus_classes == 1


def test_a_worker_names_the_classes_it_draws_in_as_its_sizes_pick_them():
    focus = WideningFocus(with_focus_seed(GPU, 7, start=2), max_compile_share=0.5, cases_per_widening=1)
    whole = compile_classes.compile_classes(dataclasses.replace(GPU, focus_seed=7), GPU.dtypes,
                                            ("dense", "mask", "varlen"), LAYOUTS)
    first = focus.labels()
    assert first == (compile_classes.classes_in_use(focus.sizes())[0].label(),)
    # The class a worker starts in, as the strategies draw it before a property's request narrows it.
    start = whole[2]
    assert first[0].startswith(f"{start.dtype} {start.mode}, ") and f"{start.heads}:{start.kv_heads} heads" in first[0]
    focus.record(100.0, 0.0)
    assert focus.classes == 2 and len(focus.labels()) == 2 and focus.labels()[0] == first[0]


def test_without_focus_or_with_a_compile_key_no_class_is_named():
    assert WideningFocus(INTERPRETER).labels() is None
    assert WideningFocus(with_focus_seed(GPU, 7), keyed=True).labels() is None


def test_it_widens_once_compiling_has_paid_off_and_the_classes_in_use_are_warm():
    focus = WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=4)
    focus.record(10.0, 9.5)  # the first case compiles the class
    for _ in range(3):
        focus.record(1.0, 0.0)
    assert focus.classes == 1  # 9.5 s of 13 s compiling: more than half
    for _ in range(6):
        focus.record(1.0, 0.0)
    assert focus.classes == 2 and focus.sizes().focus_classes == 2  # 9.5 of 19 s


def test_it_does_not_widen_on_a_case_that_compiled():
    focus = WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=1)
    focus.record(100.0, 0.0)
    assert focus.classes == 2
    focus.record(1.0, 0.5)  # the share is low, but this case met a new kernel variant
    assert focus.classes == 2
    focus.record(1.0, 0.0)
    assert focus.classes == 3


def test_a_keyed_implementation_s_worker_widens_when_the_classes_in_use_do_not_warm():
    # A kernel that goes on compiling inside its classes (on attributes its compile key leaves
    # free): staying buys little, so the worker moves on rather than spend the run in one class.
    def cold(focus):
        for _ in range(COLD_CASES_TO_WIDEN // 2):
            focus.record(10.0, 9.0)
            focus.record(1.0, 0.0)  # warm cases among them do not make the classes warm
        return focus

    assert cold(WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=4, keyed=True)).classes == 2
    # Triton's specialisation classes (no key named) compile once by construction: kept.
    assert cold(WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=4)).classes == 1
    # Keyed classes that warm after their first compilations are kept too.
    focus = WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=4, keyed=True)
    focus.record(20.0, 19.0)
    for _ in range(3 * COLD_CASES_TO_WIDEN):
        focus.record(0.1, 0.05)
    assert focus.classes == 1


def test_it_waits_for_enough_cases_after_each_widening():
    focus = WideningFocus(GPU, max_compile_share=0.5, cases_per_widening=3)
    for _ in range(9):
        focus.record(1.0, 0.0)
    assert focus.classes == 4


def test_sizes_without_compile_aware_drawing_are_left_as_they_are():
    focus = WideningFocus(INTERPRETER)
    for _ in range(20):
        focus.record(1.0, 0.0)
    assert focus.sizes() is INTERPRETER


@pytest.mark.parametrize("arguments", [{"max_compile_share": 1.5}, {"max_compile_share": -0.1},
                                       {"cases_per_widening": 0}])
def test_bad_settings_are_refused(arguments):
    with pytest.raises(ValueError, match=next(iter(arguments))):
        WideningFocus(GPU, **arguments)
