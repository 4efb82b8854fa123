"""The admission controller (`pykorn admission`): its decisions (`controller`), its HTTPS server
(`server`), and the set-up it makes for itself (`webhook_setup`, `certificates`)."""
