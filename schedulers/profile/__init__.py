"""The speed room: the availability profile, burst-buffer placement, the ordered queue and the
bandwidth tree, with their optional compiled kernels (``_mintree.c``, ``_profile.c``,
``_shares.c``) and the pure-Python twins that specify them. Built on ``model`` only."""
