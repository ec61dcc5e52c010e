"""The Python agent API: configure an agent, run tasks, get scored traces.

```python
from prefect_agentenv import AgentConfig, Task, TaskData, make_agent

async with make_agent(AgentConfig(agent="llm", max_turns=3)) as agent:
    trace = await agent.run(Task(TaskData(prompt="What is 2+2?")))
    async with agent.interaction(Task(TaskData(prompt=None))) as chat:
        segment = await chat.turn("hello")
        while not segment.terminated:
            segment = await chat.turn(f"you said: {segment.last_reply}")
    print(chat.trace.reward)
```

See docs/python-api.md.
"""

from prefect_agentenv.api.agent import Agent, make_agent
from prefect_agentenv.api.config import (
    AgentConfig,
    NetworkPolicy,
    RetryConfig,
    ScoringConfig,
    Task,
    TaskData,
    load_agent_config,
)
from prefect_agentenv.api.interaction import Interaction
from prefect_agentenv.api.trace import Receipt, Segment, Trace

__all__ = ["Agent", "AgentConfig", "Interaction", "NetworkPolicy", "Receipt", "RetryConfig", "ScoringConfig",
           "Segment", "Task", "TaskData", "Trace", "load_agent_config", "make_agent"]
