"""A simulated ESXi storage stack that writes real esxtop batch CSV.

    from exporter.simulator import list_scenarios, load_scenario, Simulation, ScenarioError
    sim = Simulation(load_scenario("queue-overrun"), seed=0, interval=5.0)
    lines = [sim.header(h) for h in sim.hosts]; sample = sim.step()   # {host: data line}

The queueing model lives in `queueing`, the esxtop format in `esxtop_writer`, scenario files
(YAML data, users can write their own) in `scenarios/` and are read by `scenario`.
"""
from .scenario import Scenario, ScenarioError, list_scenarios, load_scenario
from .simulation import Simulation

__all__ = ["Scenario", "ScenarioError", "Simulation", "list_scenarios", "load_scenario"]
