"""The simulators that tests and benchmarks both run (bench/ imports nothing of tests/ for them):

- storagesim/: the project's vSphere storage simulator, govmomi's simulator with the storage,
  vSAN, SMART, events, SIOC, VAAI and churn a real vCenter has (a Go program; sims.py builds and
  starts it, and starts VMware's plain vcsim);
- hostile_vsphere: an HTTPS front that passes a simulator's answers through, or answers chosen
  calls slowly, hostile or oversized;
- esxi_ssh/: an ESXi host over SSH: a real OpenSSH server on 127.0.0.1 (sshd.py) whose sessions
  run stand-ins for esxtop (esxtop.py) and esxcli (esxcli.py: real hosts' answers, from
  tests/fixtures/esxcli and tests/fixtures/smart, where they are kept with their provenance);
- esxtop_csv: esxtop's batch CSV, written as esxtop writes it (quoted cells, trailing comma);
- esxtop_churn: a wide esxtop capture whose LUNs, paths and worlds come and go (memory soaks);
- ports: a free port on 127.0.0.1.

The exporter's own --simulate (exporter/simulator/) is part of the product, not of these.
"""
