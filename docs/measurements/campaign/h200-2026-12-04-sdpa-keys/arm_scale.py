from sdpa_arms import UNKEYED, arm, by_scale

impl = arm(by_scale, UNKEYED)
