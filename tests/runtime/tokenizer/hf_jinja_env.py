"""The Jinja environment of Hugging Face's apply_chat_template
(transformers.utils.chat_template_utils._compile_jinja_template), shared by
the golden-case generators: ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension; tojson as json.dumps (no HTML
escaping; ensure_ascii, indent, separators, sort_keys); raise_exception;
strftime_now, pinned here to a fixed time so renders are reproducible.
"""
import datetime
import json

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2025, 1, 15, 9, 30, 5)


def make_env(now=NOW):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env
