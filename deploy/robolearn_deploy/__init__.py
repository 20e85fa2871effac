"""robolearn-deploy: run a robolearn policy bundle on a robot. numpy + onnxruntime (+ TensorRT,
optional); never torch or robolearn, so it installs on a robot computer on its own."""

__version__ = "0.1.0"

from robolearn_deploy.actions import ActionMapper
from robolearn_deploy.bundle import BUNDLE_FORMAT, Bundle
from robolearn_deploy.control_loop import ControlLoop, LoopReport, Safety, Step
from robolearn_deploy.errors import DeployError
from robolearn_deploy.observations import ObservationBuilder, register_signal_source, register_source
from robolearn_deploy.policy import Policy
from robolearn_deploy.robot import JointCommand, RobotInterface, RobotState

__all__ = [
    "BUNDLE_FORMAT", "ActionMapper", "Bundle", "ControlLoop", "DeployError", "JointCommand", "LoopReport",
    "ObservationBuilder", "Policy", "RobotInterface", "RobotState", "Safety", "Step", "register_signal_source",
    "register_source",
]  # fmt: skip
