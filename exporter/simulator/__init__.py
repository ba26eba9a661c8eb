"""A simulated ESXi storage stack that writes real esxtop batch CSV.

    from exporter.simulator import list_scenarios, load_scenario, Simulation, ScenarioError
    sim = Simulation(load_scenario("queue-overrun"), seed=0, interval=5.0)
    lines = [sim.header(h) for h in sim.hosts]; sample = sim.step()   # {host: data line}

Modules: `queueing` (the model), `esxtop_writer` (the format), `simulation` (time, phases, one
stream per host), `spec` (what a scenario is), `schema` (YAML -> spec, with one-line errors),
`scenario` (finding built-in `scenarios/*.yaml` or a user's file), `units` ("5ms", "64KiB").
"""

from .scenario import list_scenarios, load_scenario, scenario_from_text
from .simulation import Simulation
from .spec import Scenario, ScenarioError

__all__ = ["Scenario", "ScenarioError", "Simulation", "list_scenarios", "load_scenario", "scenario_from_text"]
