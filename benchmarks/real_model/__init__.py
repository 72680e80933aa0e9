"""Real-model benchmarks: ``python -m benchmarks.real_model`` (:mod:`.benchmark`, its phases in
:mod:`.phases`) asks whether a day of the arena lifts a real model; ``python -m
benchmarks.real_model.serving`` (:mod:`.serving`) measures its generation speed."""
