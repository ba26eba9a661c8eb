"""One SSH transport for every source that reaches a host over SSH (the esxtop stream, the esxcli
runner): the target and its options (target), the client's environment and askpass (environment),
and the supervision of its processes with their backoff (process). It knows no remote command."""
