"""The garbage-collector and GIL settings a serving process starts with."""

import gc
import sys

from cleveragents.transports import gc_policy


def test_serving_freezes_start_up_objects_and_collects_the_young_less_often():
    threshold, frozen, switch = gc.get_threshold(), gc.get_freeze_count(), sys.getswitchinterval()
    try:
        gc_policy.tune_for_serving()
        assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, threshold[1], threshold[2])
        assert gc.get_freeze_count() > frozen
        assert sys.getswitchinterval() == gc_policy.SWITCH_INTERVAL  # worker threads take turns at the GIL quickly
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        sys.setswitchinterval(switch)


def test_sharing_the_gil_changes_only_the_switch_interval():
    threshold, switch = gc.get_threshold(), sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        gc_policy.share_the_gil()
        assert sys.getswitchinterval() == gc_policy.SWITCH_INTERVAL
        assert gc.get_threshold() == threshold  # the collector is tuned only once the server is built
    finally:
        sys.setswitchinterval(switch)
