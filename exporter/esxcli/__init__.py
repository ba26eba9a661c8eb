"""esxcli's storage configuration (per-device DSNRO, queue depths, multipathing, drivers): the
text it prints (default and --formatter=csv) parsed into the model, whichever way it was asked
(over SSH, or through the vSphere API's managed method executer)."""
