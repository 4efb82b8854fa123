"""The fake resource manager: runs scenarios (`shim_fake.scenario`) against a core over si.v1, through
rmclient, as a real RM would drive it."""
