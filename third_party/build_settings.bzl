"""A boolean command-line flag (`--//pkg:name`), which, unlike --define, a transition can set."""

def _bool_flag_impl(_ctx):
    return []

bool_flag = rule(
    implementation = _bool_flag_impl,
    build_setting = config.bool(flag = True),
)
