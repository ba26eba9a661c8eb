"""The devices of tests/fixtures/esxcli/, the configuration host's answers: a SAN LUN, a second
(gold tier) LUN, a local NVMe device and a vVol protocol endpoint."""

from __future__ import annotations

SAN, GOLD = "naa.600601601e3021001a2b3c4d5e6f0010", "naa.600601601e3021001a2b3c4d5e6f0020"
NVME = "t10.NVMe____Dell_Ent_NVMe_v2_AGN_MU_U.2_1.6TB________01000000E4D25C00"
PE = "naa.6000000000000000000000000000ff01"
