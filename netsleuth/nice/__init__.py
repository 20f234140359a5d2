"""NICE-style model checking of in-process controller apps.

``app``        the in-process app API (NOX-style handlers, :class:`ControllerAPI` calls)
``messages``   light, hashable OpenFlow messages on the model's control channels
``state``      the canonical, hashable, copy-on-write system state
``system``     the transition relation: enabled transitions and firing them
``properties`` the property library (callbacks on a fixed set of events)
``explore``    DFS with state matching, strategies as filters, sleep-set DPOR, random walk
``scenarios``  the experiments of the NICE paper (pings, mobile host, triangle)
``job``/``cli`` ``netsleuth check`` and the in-process replay of counterexamples
"""
