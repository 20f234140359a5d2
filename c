/work/main/netsleuth/controllers/osken_main.py:19: EventletDeprecationWarning: 
Eventlet is deprecated. It is currently being maintained in bugfix mode, and
we strongly recommend against using it for new projects.

If you are already using Eventlet, we recommend migrating to a different
framework.  For more detail see
https://eventlet.readthedocs.io/en/latest/asyncio/migration.html

  import eventlet.wsgi
1 RLock(s) were not greened, to fix this error make sure you run eventlet.monkey_patch() before importing any other modules.
loading app os_ken.app.simple_switch
loading app os_ken.controller.ofp_handler
instantiating app os_ken.app.simple_switch of SimpleSwitch
instantiating app os_ken.controller.ofp_handler of OFPHandler
