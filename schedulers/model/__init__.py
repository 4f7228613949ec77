"""What every part of a scheduler agrees on: jobs and their requests, the machine as a
scheduler sees it, decisions, and the policy contract (the view a policy reads, the decisions
it returns). Imports nothing else of ``mrsched.schedulers``."""
