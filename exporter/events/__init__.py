"""ESXi's storage events as counters: vCenter's event stream (an EventHistoryCollector per target)
and, over SSH, a host's /var/log/vobd.log. Both count into one bounded tally per origin
(exporter.events.tally) that the store publishes as esxi_storage_events_total."""
