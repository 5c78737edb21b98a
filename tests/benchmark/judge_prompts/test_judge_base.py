import pytest

from benchmark.judge_prompts import TEMPLATES
from benchmark.judge_prompts.base import (
    JudgeOutputError,
    Template,
    TemplateError,
    build_call,
    cache_key,
    judgment_from_outputs,
    load_json_object,
    render,
    should_retry,
)
from benchmark.judge_prompts.rubric import parse_rubric

T = Template(id="t", system="You judge {thing}.", user="Answer: {answer}\nLiteral {{braces}}")


def test_render_fills_placeholders_and_keeps_escaped_braces():
    system, user = render(T, {"thing": "cakes", "answer": "a {x} b", "unused": 1})
    assert system == "You judge cakes."
    assert user == "Answer: a {x} b\nLiteral {braces}"


def test_render_names_every_missing_placeholder():
    with pytest.raises(TemplateError, match="answer, thing"):
        render(T, {})


def test_template_placeholders_must_be_plain_names():
    with pytest.raises(TemplateError, match="plain name"):
        render(Template(id="t", system="{a.b}", user=""), {})
    with pytest.raises(TemplateError, match="malformed"):
        render(Template(id="t", system="{unclosed", user=""), {})


def test_version_changes_with_text_and_is_stable():
    same = Template(id="t", system=T.system, user=T.user)
    assert same.version == T.version
    assert Template(id="t", system=T.system + " ", user=T.user).version != T.version
    assert Template(id="t", system=T.system, user=T.user + "!").version != T.version
    assert Template(id="u", system=T.system, user=T.user).version != T.version


def test_builtin_templates_render_with_their_placeholders():
    for template in TEMPLATES.values():
        system, user = render(template, {name: "X" for name in template.placeholders})
        assert system and user


def test_call_is_openai_chat_with_images_as_parts():
    call = build_call(
        T, "gpt-4o", "lbl", {"thing": "a", "answer": "b"}, ["data:image/png;base64,AA"]
    )
    assert call.messages[0] == {"role": "system", "content": "You judge a."}
    user = call.messages[1]
    assert user["role"] == "user"
    assert user["content"][0] == {"type": "text", "text": "Answer: b\nLiteral {braces}"}
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AA"},
    }
    assert (call.template_id, call.template_version, call.label) == ("t", T.version, "lbl")
    plain = build_call(T, "gpt-4o", "lbl", {"thing": "a", "answer": "b"})
    assert plain.messages[1]["content"] == "Answer: b\nLiteral {braces}"


def test_cache_key_is_stable_and_sensitive_to_each_input():
    values = {"thing": "a", "answer": "b"}
    key = build_call(T, "m", "x", values, ["img1"]).key
    assert key == build_call(T, "m", "other label", dict(reversed(values.items())), ["img1"]).key
    assert len(key) == 64
    variants = [
        build_call(T, "m2", "x", values, ["img1"]),
        build_call(T, "m", "x", {"thing": "a", "answer": "c"}, ["img1"]),
        build_call(T, "m", "x", {"thing": "z", "answer": "b"}, ["img1"]),
        build_call(T, "m", "x", values, ["img2"]),
        build_call(T, "m", "x", values, []),
        build_call(
            Template(id="t", system=T.system + ".", user=T.user), "m", "x", values, ["img1"]
        ),
        build_call(Template(id="t2", system=T.system, user=T.user), "m", "x", values, ["img1"]),
    ]
    keys = {v.key for v in variants}
    assert key not in keys and len(keys) == len(variants)
    # extra values a template does not use do not change the key
    assert build_call(T, "m", "x", {**values, "spare": 1}, ["img1"]).key == key
    assert cache_key(T, "m", {"a": 1, "b": 2}) == cache_key(T, "m", {"b": 2, "a": 1})


def test_json_fence_and_whitespace_are_tolerated_nothing_else():
    assert load_json_object('  \n```json\n{"a": 1}\n```\n') == {"a": 1}
    assert load_json_object('```\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(JudgeOutputError, match="not valid JSON"):
        load_json_object('Here you go: {"a": 1}')
    with pytest.raises(JudgeOutputError, match="expected a JSON object, got an array"):
        load_json_object("[1]")
    with pytest.raises(JudgeOutputError, match="empty output"):
        load_json_object("   ")


def test_failed_output_is_kept_retried_once_then_failed():
    call = build_call(T, "m", "r1", {"thing": "a", "answer": "b"})
    first = judgment_from_outputs(call, ["nonsense"], parse_rubric)
    assert not first.ok and should_retry(first)
    assert first.raw == "nonsense" and "not valid JSON" in (first.error or "")
    second = judgment_from_outputs(call, ["nonsense", "still {bad"], parse_rubric)
    assert not second.ok and not should_retry(second)
    assert [a.raw for a in second.attempts] == ["nonsense", "still {bad"]
    recovered = judgment_from_outputs(
        call, ["nonsense", '{"score": 1, "justification": "j"}'], parse_rubric
    )
    assert recovered.ok and recovered.value is not None and recovered.value.score == 1
    assert recovered.attempts[0].error and recovered.attempts[1].error is None
    assert (recovered.label, recovered.key, recovered.template_version) == (
        "r1",
        call.key,
        T.version,
    )
