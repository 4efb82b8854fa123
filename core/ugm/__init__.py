"""User and group limits: what each user and group uses, where, and the limits that hold them
(YuniKorn's ugm)."""
