"""Running a policy: the runtime (the one truth of what is busy; knowledge and I/O-awareness
applied before every round; every decision checked), the job models that turn a start into
protocol actions, and the decision cost charged to the simulation."""
