"""pyVmomi's answer deserializer, let go of as soon as its answer is read.

pyVmomi's SoapResponseDeserializer keeps the expat parser it made (`self.parser`), and the
parser's handlers are the deserializer's own bound methods: a reference cycle that holds the
parser, its buffers and the deserialized answer (`deser.result`) until the cyclic collector runs.
The inventory walk holds that collector off (exporter.vsphere.gcpause), so every answer of a walk
stayed in memory to its end: about 5.8 KiB a call on the 3-host fixture, every answer whole on a
large vCenter. `install()` makes pyVmomi use a deserializer that drops its parser when
Deserialize returns or raises, so reference counting frees everything at once.
"""

from __future__ import annotations

import pyVmomi.SoapAdapter

_Original = pyVmomi.SoapAdapter.SoapResponseDeserializer


class LettingGoDeserializer(_Original):
    """pyVmomi's deserializer, without the cycle through its parser once an answer is read."""

    def Deserialize(self, response, resultType, nsMap=None):  # noqa: N802 - pyVmomi's name
        try:
            return super().Deserialize(response, resultType, nsMap)
        finally:
            # pyVmomi drops them only on a fault; its inner deserializer keeps its own on an error.
            self.__dict__.pop("parser", None)
            self.deser.__dict__.pop("parser", None)
            self.deser.__dict__.pop("origHandlers", None)


def install() -> None:
    """Every pyVmomi call of the process deserializes with LettingGoDeserializer (idempotent);
    pyVmomi looks the class up in its module at every call."""
    pyVmomi.SoapAdapter.SoapResponseDeserializer = LettingGoDeserializer


install()
