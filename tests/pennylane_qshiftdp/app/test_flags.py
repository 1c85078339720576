"""``qshiftdp train``'s flags come from TrainConfig's field declarations (app.flags): one place for
each setting's default, help text, parser and choices."""

import argparse
import dataclasses

from pennylane_qshiftdp.app import cli
from pennylane_qshiftdp.app.config import TrainConfig, flag_name
from pennylane_qshiftdp.app.flags import flag_of

#: The flags of ``qshiftdp train`` that are not settings of the run.
RUN_FLAGS = {"--resume", "--dry-run", "--no-probe", "--no-progress", "--skip-plan-check"}


def _train_parser():
    return cli.build_parser().subparsers.choices["train"]


def test_every_setting_but_init_scale_has_its_flag_and_nothing_else_is_hand_written():
    fields = dataclasses.fields(TrainConfig)
    assert [f.name for f in fields if flag_of(f) is None] == ["init_scale"]
    flags = {a.option_strings[0]: a for a in _train_parser()._actions
             if not isinstance(a, argparse._HelpAction)}
    declared = {flag_of(f).option(f.name): f for f in fields if flag_of(f)}
    assert set(flags) == set(declared) | RUN_FLAGS
    for option, field in declared.items():
        action, spec = flags[option], flag_of(field)
        assert action.help == spec.help
        assert option == flag_name(field.name).split(" ")[0]
        if spec.action is None:
            assert action.dest == field.name and action.type is spec.type
            assert action.default == (field.default if field.name != "output_dir"
                                      else "runs/qshiftdp-train")
            assert action.choices == (list(spec.choices) if spec.choices else None)


def test_parsed_flags_build_the_config():
    args = _train_parser().parse_args(["--batch-size", "16", "--seeded-noise", "--classes", "1,2",
                                       "--accountant", "rdp", "--diagnostics"])
    config = cli._train_config(args)
    assert config == dataclasses.replace(
        TrainConfig(), expected_batch_size=16, secure_mode=False, classes=(1, 2),
        accountant="rdp", diagnostics=True, output_dir="runs/qshiftdp-train")
