"""How far a judge can be trusted: human labels, agreement and calibration per judge setup.

* ``labels`` — human labels of criteria, versioned in the store; ``label_sampling`` — which task
  runs a reviewer labels; ``label_template`` — what can be labelled in a run, as a file to fill;
  ``label_pool`` — every run's labels of a setup's criteria, which a calibration rests on.
* ``agreement`` — agreement, Cohen's κ, TPR/TNR.
* ``calibration`` / ``calibration_run`` / ``calibration_markdown`` — judges against the labels,
  per judge setup.
* ``judge_trust`` — a run's rubric scores by their setups' calibration, and the gate on it;
  ``setup_gate`` — the gate on the setups known before a run, checked before it starts.
"""
