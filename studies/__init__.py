"""The seed papers' studies: a campaign file per study (``NAME.yaml``), the script that turns
its runs into the paper's tables (``NAME_summary.py``), the claim page that says what was
reproduced (``NAME.md``) and its figures. The campaign machinery they run on is
``mrsched.expe``; nothing outside this folder imports it."""
