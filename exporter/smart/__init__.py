"""Local disks' health from ESXi: each local device's SMART page (`esxcli storage core device smart
get`) and each NVMe controller's health log (`esxcli nvme device log smart get`), over SSH or
through the vSphere API, on an interval of their own (docs/smart.md).

Modules: `parse` (the text, JSON and API forms into the model, strictly; imports only the model,
so the simulator can write for it), `disks` (one disk's readings into its DiskHealth), `plan`
(which commands a round runs), `reader` (one round on one host), `rounds` (a source's rounds:
store, health, logs), `ssh` and `vsphere` (the two transports' loops).
"""
