"""NICE-style model checking of in-process controller apps.

``app``        the in-process app API (NOX-style handlers, :class:`ControllerAPI` calls)
``loading``    ``app:`` specs -> app classes, and a :class:`Config` -> a runnable System
``errors``     the model checker's typed errors
``messages``   light, hashable OpenFlow messages on the model's control channels
``state``      the canonical, hashable, copy-on-write system state
``transitions`` the transition kinds and their JSON form
``system``     the transition relation: enabled transitions and firing them
``properties`` the property library (callbacks on a fixed set of events); ``app_properties``
               NICE's application-specific ones; ``property_registry`` names -> classes
``violation``  a property violation: the live checker's Finding, found by the model checker
``explore``    DFS with state matching, strategies as filters, sleep-set DPOR, random walk
``scenarios``  the experiments of the NICE paper (pings, mobile host, triangle);
               ``bug_scenarios`` NICE's bugs IV..XIII (load balancer, traffic engineering)
``job``/``cli`` ``netsleuth check`` and the in-process replay of counterexamples
``cex_inputs``/``cex_inputs_cli`` ``netsleuth cex-inputs``: a counterexample as inputs of a real run
"""
