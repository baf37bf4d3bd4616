"""A Terraform root applied to a running emulator: the terraform CLI driven against it
(:mod:`.terraform`), the ready file of a running ``serverless-retry local`` (:mod:`.ready_file`) and a
changed root re-applied to it (:mod:`.reapply`)."""
