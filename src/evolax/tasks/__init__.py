"""Tasks (one environment each; evolax batches them)."""

from evolax.tasks.action_cost import ActionCost, ActionCostState
from evolax.tasks.arm import Arm, ArmState, MultiTaskArm, ReachParams, ReachState
from evolax.tasks.base import MultiAgentTask, Task
from evolax.tasks.brax import Brax, BraxTaskState
from evolax.tasks.brax_physics import BraxPhysics
from evolax.tasks.cartpole import CartPoleState, CartPoleSwingUp
from evolax.tasks.clip import CLIPScorer
from evolax.tasks.craftax import Craftax
from evolax.tasks.distributions import ParamSet, TaskDistribution, UniformParams, on_member
from evolax.tasks.double_pole import DoublePole, DoublePoleState
from evolax.tasks.evojax import EvoJAXTask
from evolax.tasks.feet_contact import FeetContact, FeetContactState
from evolax.tasks.gymnasium import Gymnasium
from evolax.tasks.gymnax import GymnaxTask, GymnaxTaskState
from evolax.tasks.image_approximation import (
    ImageApproximation,
    ImageApproximationState,
    load_target,
)
from evolax.tasks.jax_env import JaxEnvState, JaxEnvTask
from evolax.tasks.jaxmarl import JaxMARL
from evolax.tasks.jumanji import Jumanji
from evolax.tasks.kinetix import Kinetix, KinetixParams
from evolax.tasks.mnist import MNIST, MnistState
from evolax.tasks.multi_agent_waterworld import MultiAgentWaterWorld
from evolax.tasks.navix import Navix
from evolax.tasks.playground import Playground, PlaygroundState
from evolax.tasks.seq2seq import Seq2SeqAddition, Seq2SeqState
from evolax.tasks.text import Arithmetic, Countdown, PromptTask, TextState, TextTask
from evolax.tasks.text_painting import TextGuidedPainting, TextGuidedPaintingState
from evolax.tasks.visual_discrimination import VisualDiscrimination, VisualDiscriminationState
from evolax.tasks.waterworld import WaterWorld, WaterWorldState
from evolax.tasks.wrapper import TaskWrapper
from evolax.tasks.xminigrid import XLandMiniGrid, XLandRulesets
from evolax.tasks.xor import XOR, XORState

__all__ = [
    "TaskWrapper",
    "Arm",
    "MultiTaskArm",
    "ReachParams",
    "ReachState",
    "ArmState",
    "ActionCost",
    "ActionCostState",
    "Brax",
    "BraxPhysics",
    "BraxTaskState",
    "CLIPScorer",
    "Craftax",
    "MNIST",
    "CartPoleState",
    "CartPoleSwingUp",
    "DoublePole",
    "DoublePoleState",
    "EvoJAXTask",
    "FeetContact",
    "FeetContactState",
    "Gymnasium",
    "GymnaxTask",
    "GymnaxTaskState",
    "ImageApproximation",
    "ImageApproximationState",
    "JaxEnvState",
    "JaxEnvTask",
    "JaxMARL",
    "Jumanji",
    "Kinetix",
    "KinetixParams",
    "MnistState",
    "MultiAgentTask",
    "MultiAgentWaterWorld",
    "Navix",
    "ParamSet",
    "on_member",
    "Playground",
    "PlaygroundState",
    "Seq2SeqAddition",
    "Arithmetic",
    "Countdown",
    "PromptTask",
    "TextState",
    "TextTask",
    "Seq2SeqState",
    "Task",
    "TaskDistribution",
    "UniformParams",
    "XLandMiniGrid",
    "XLandRulesets",
    "TextGuidedPainting",
    "TextGuidedPaintingState",
    "WaterWorld",
    "WaterWorldState",
    "VisualDiscrimination",
    "VisualDiscriminationState",
    "XOR",
    "XORState",
    "load_target",
]

REGISTRY = {
    "cartpole": CartPoleSwingUp,
    "arm": Arm,
    "multi_task_arm": MultiTaskArm,
    "mnist": MNIST,
    "seq2seq": Seq2SeqAddition,
    "arithmetic": Arithmetic,
    "countdown": Countdown,
    "image_approximation": ImageApproximation,
    "waterworld": WaterWorld,
    "waterworld_ma": MultiAgentWaterWorld,
    "brax": Brax,  # brax:ENV, e.g. brax:ant
    "gymnax": GymnaxTask,  # gymnax:ENV, e.g. gymnax:Pendulum-v1
    "playground": Playground,  # playground:ENV, e.g. playground:CartpoleBalance
    "gymnasium": Gymnasium,  # gymnasium:ENV, e.g. gymnasium:HalfCheetah-v5 (on the host)
    "jumanji": Jumanji,  # jumanji:ENV, e.g. jumanji:Snake-v1
    "navix": Navix,  # navix:ENV, e.g. navix:Navix-Empty-5x5-v0
    "xminigrid": XLandMiniGrid,  # xminigrid:ENV, e.g. xminigrid:MiniGrid-Empty-5x5
    "craftax": Craftax,  # craftax:ENV, e.g. craftax:Craftax-Classic-Symbolic-v1
    "jaxmarl": JaxMARL,  # jaxmarl:ENV, e.g. jaxmarl:MPE_simple_spread_v3 (multi-agent)
    "kinetix": Kinetix,  # kinetix:ENV, e.g. kinetix:Kinetix-Symbolic-Continuous-v1
    "evojax": EvoJAXTask,
    "xor": XOR,
    "double_pole": DoublePole,
    "visual_discrimination": VisualDiscrimination,
}
"""Tasks by the short name a configuration gives (``task.name``); an adapter takes its
environment after a colon."""
