

def test_minimize_localize_with_a_controller_that_is_not_python_is_a_note_not_a_failure(tmp_path):
    from pathlib import Path

    from netsleuth.jobs.minimize import MinimizeOptions, _localize_preflight

    opts = MinimizeOptions(trace=Path("t.jsonl"), out=tmp_path, localize=True,
                           controller=["cmd:/usr/sbin/ovs-testcontroller ptcp:{port}"])
    assert _localize_preflight(opts, "osken:os_ken.app.simple_switch").startswith(
        "localization needs a Python controller")
    opts.controller = ["osken:os_ken.app.simple_switch"]
    assert _localize_preflight(opts, "osken:os_ken.app.simple_switch") == ""
    opts.localize = False
    assert _localize_preflight(opts, "tcp:127.0.0.1:6633") == ""
