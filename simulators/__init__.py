"""The simulators that tests and benchmarks both run (bench/ imports nothing of tests/ for them):

- storagesim/: the project's vSphere storage simulator, govmomi's simulator with the storage,
  vSAN, SMART, events, SIOC, VAAI and churn a real vCenter has (a Go program; sims.py builds and
  starts it, and starts VMware's plain vcsim);
- hostile_vsphere: an HTTPS front that passes a simulator's answers through, or answers chosen
  calls slowly, hostile or oversized.

The exporter's own --simulate (exporter/simulator/) is part of the product, not of these.
"""
